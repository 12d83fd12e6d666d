"""Captured changes as Debezium envelopes: one JSON line per row change.

The shape the change-feed pipeline reads (``format: debezium``): ``op``, ``before``,
``after``, ``source`` (connector, capture name, database, schema, table and the
connector's positions) and ``ts_ms``.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any


def envelope(
    source: dict[str, Any],
    op: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> str:
    """One Debezium envelope as a JSON line (``source``: its ``source`` block)."""
    return json.dumps(
        {
            "before": before,
            "after": after,
            "source": {"version": "hashcdc", **source},
            "op": op,
            "ts_ms": int(time.time() * 1000),
        },
        separators=(",", ":"),
        default=str,
    )


def epoch_ms(moment: dt.datetime) -> int:
    """A moment in epoch milliseconds (Debezium's ``ts_ms``)."""
    return int(moment.timestamp() * 1000)
