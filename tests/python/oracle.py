"""A small pure-Python model of hash-diff CDC, independent of the code under test.

Rows are dicts of already-typed Python values; a row's identity is the tuple of its key
values and its change signature the tuple of its compared (non-key, non-ignored) values.
Python's own equality does the canonicalisation the hashes must match: Decimal("1.5")
equals Decimal("1.50"), and None differs from "".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Version:
    row: dict[str, Any]
    operation: str
    eff_start_date: str


def apply_extract(
    state: dict[tuple, Version],
    extract: list[dict[str, Any]],
    business_date: str,
    keys: list[str],
    compared: list[str],
    extract_type: str,
) -> tuple[dict[tuple, Version], list[Version]]:
    """The new state (I, U, N, X rows) and the history rows (I, U, D) of one date."""
    incoming = {tuple(row[k] for k in keys): row for row in extract}
    rows = {} if extract_type == "full" else {key: v.row for key, v in state.items()}
    rows.update(incoming)
    return _tagged(state, rows, set(incoming), business_date, compared)


def _tagged(
    state: dict[tuple, Version],
    rows: dict[tuple, dict[str, Any]],
    touched: set[tuple],
    business_date: str,
    compared: list[str],
) -> tuple[dict[tuple, Version], list[Version]]:
    """Tag the rows after a date against the state before it: the new state and history.

    I new key, U compared values changed, N touched but equal, X untouched (kept as it
    was), D a key of the state that is gone.
    """
    new_state: dict[tuple, Version] = {}
    history: list[Version] = []
    for key, row in rows.items():
        previous = state.get(key)
        if previous is None:
            version = Version(row, "I", business_date)
            history.append(version)
        elif tuple(row[c] for c in compared) != tuple(previous.row[c] for c in compared):
            version = Version(row, "U", business_date)
            history.append(version)
        else:
            operation = "N" if key in touched else "X"
            version = Version(previous.row, operation, previous.eff_start_date)
        new_state[key] = version
    for key, previous in state.items():
        if key not in rows:
            history.append(Version(previous.row, "D", business_date))
    return new_state, history


@dataclass(frozen=True)
class FeedEvent:
    """A change event in plain Python: op c/u/d/r/t, typed images, its log position."""

    op: str
    before: tuple | None  # the before image's identity (key values, or the whole row)
    after: tuple | None  # the after image's values, in column order
    sequence: int


def apply_feed(
    state: dict[tuple, Version],
    watermark: int | None,
    delivered: list[FeedEvent],
    business_date: str,
    columns: list[str],
    identity: list[str],
    compared: list[str],
) -> tuple[dict[tuple, Version], list[Version], int | None]:
    """Apply a date's delivered events one at a time, in sequence order, with a key.

    Events at or below the watermark are skipped, the same event delivered twice is applied
    once. Returns the new state, the net history of the date and the new watermark.
    """
    applied = sorted(
        {e for e in delivered if watermark is None or e.sequence > watermark},
        key=lambda e: e.sequence,
    )
    rows = {key: version.row for key, version in state.items()}
    touched: set[tuple] = set()
    for event in applied:
        if event.op == "t":
            rows.clear()
            touched.clear()
            continue
        if event.before is not None and event.op in ("u", "d"):
            rows.pop(event.before, None)
            touched.add(event.before)
        if event.after is not None and event.op in ("c", "u", "r"):
            row = dict(zip(columns, event.after, strict=True))
            key = tuple(row[c] for c in identity)
            rows[key] = row
            touched.add(key)
    new_watermark = max(
        [e.sequence for e in applied] + ([watermark] if watermark else []), default=None
    )
    new_state, history = _tagged(state, rows, touched, business_date, compared)
    return new_state, history, new_watermark


def apply_keyless_feed(
    copies: dict[tuple, int],
    watermark: int | None,
    delivered: list[FeedEvent],
) -> tuple[dict[tuple, int], dict[tuple, tuple[str, int]], int | None]:
    """The same for a table without a key: identical rows counted.

    Returns the new copies per row, the net history of the date (row -> (operation,
    copies; for D the copies before)) and the new watermark.
    """
    applied = sorted(
        {e for e in delivered if watermark is None or e.sequence > watermark},
        key=lambda e: e.sequence,
    )
    counts = dict(copies)
    for event in applied:
        if event.op == "t":
            counts.clear()
            continue
        if event.before is not None and event.op in ("u", "d"):
            counts[event.before] = counts.get(event.before, 0) - 1
        if event.after is not None and event.op in ("c", "u", "r"):
            counts[event.after] = counts.get(event.after, 0) + 1
    counts = {row: n for row, n in counts.items() if n > 0}
    history: dict[tuple, tuple[str, int]] = {}
    for row in set(copies) | set(counts):
        old, new = copies.get(row, 0), counts.get(row, 0)
        if old == 0 and new:
            history[row] = ("I", new)
        elif new == 0 and old:
            history[row] = ("D", old)
        elif new != old:
            history[row] = ("U", new)
    new_watermark = max(
        [e.sequence for e in applied] + ([watermark] if watermark else []), default=None
    )
    return counts, history, new_watermark
