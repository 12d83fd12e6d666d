"""Change events as a Debezium connector writes them, for the change-feed tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Event:
    """One change event: Debezium's op, before and after images and its log position."""

    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    lsn: int
    source: dict[str, Any] | None = None

    def debezium_json(self, wrapped: bool = False) -> str:
        """The event as one line of Debezium JSON (``wrapped``: with the schema wrapper)."""
        envelope = {
            "before": self.before,
            "after": self.after,
            "op": self.op,
            "ts_ms": 1_700_000_000_000 + self.lsn,
            "source": self.source
            or {"connector": "postgresql", "lsn": self.lsn, "txId": self.lsn // 10},
        }
        if wrapped:
            envelope = {"schema": {"type": "struct", "optional": False}, "payload": envelope}
        return json.dumps(envelope)


def create(lsn: int, **after: Any) -> Event:
    return Event("c", None, after, lsn)


def update(lsn: int, before: dict[str, Any], **after: Any) -> Event:
    return Event("u", before, after, lsn)


def delete(lsn: int, **before: Any) -> Event:
    return Event("d", before, None, lsn)


def truncate(lsn: int) -> Event:
    return Event("t", None, None, lsn)


def json_lines(events: list[Event], wrapped: bool = False) -> str:
    return "".join(event.debezium_json(wrapped) + "\n" for event in events)


def feed_config(
    name: str,
    columns: list[dict[str, Any]],
    fmt: str = "debezium",
    changelog: bool = False,
    **changes: Any,
) -> dict[str, Any]:
    """A change-feed table config reading every file in ``landing/<name>/<date>/``."""
    return {
        "changelog": changelog,
        "name": name,
        "extract_type": "changes",
        "source": {"path": f"landing/{name}/{{business_date}}/*", "format": fmt},
        "changes": {"sequence_by": ["source.lsn"], **changes},
        "columns": columns,
    }
