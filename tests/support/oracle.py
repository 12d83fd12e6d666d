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


@dataclass(frozen=True)
class FeedPosition:
    """How far a feed was applied: the greatest position, and the events applied *at* it.

    Several events may share one position (a snapshot's reads, the rows of one statement)
    and arrive on different dates: an event is applied once, whenever it arrives, unless a
    later position was applied before it came (then it is late, and skipped).
    """

    watermark: int | None = None
    applied_at_watermark: frozenset[FeedEvent] = frozenset()

    def new_events(self, delivered: list[FeedEvent]) -> list[FeedEvent]:
        """The delivered events not applied before, each once, in the order they apply.

        At one position, a snapshot's reads come before other events.
        """
        fresh = {
            e
            for e in delivered
            if self.watermark is None
            or e.sequence > self.watermark
            or (e.sequence == self.watermark and e not in self.applied_at_watermark)
        }
        return sorted(fresh, key=lambda e: (e.sequence, e.op != "r"))

    def after(self, applied: list[FeedEvent]) -> FeedPosition:
        """The position once ``applied`` were applied."""
        watermark = max(
            [e.sequence for e in applied] + ([self.watermark] if self.watermark else []),
            default=None,
        )
        at = frozenset(e for e in applied if e.sequence == watermark)
        if watermark == self.watermark:
            at |= self.applied_at_watermark
        return FeedPosition(watermark, at)


def apply_feed(
    state: dict[tuple, Version],
    position: FeedPosition,
    delivered: list[FeedEvent],
    business_date: str,
    columns: list[str],
    identity: list[str],
    compared: list[str],
) -> tuple[dict[tuple, Version], list[Version], FeedPosition]:
    """Apply a date's delivered events one at a time, in sequence order, with a key.

    Events applied before are skipped (:class:`FeedPosition`), the same event delivered
    twice is applied once. Returns the new state, the net history of the date and the new
    position.
    """
    applied = position.new_events(delivered)
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
    new_state, history = _tagged(state, rows, touched, business_date, compared)
    return new_state, history, position.after(applied)


def apply_keyless_feed(
    copies: dict[tuple, int],
    position: FeedPosition,
    delivered: list[FeedEvent],
) -> tuple[dict[tuple, int], dict[tuple, tuple[str, int]], FeedPosition]:
    """The same for a table without a key: identical rows counted.

    Returns the new copies per row, the net history of the date (row -> (operation,
    copies; for D the copies before)) and the new position.
    """
    applied = position.new_events(delivered)
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
    return counts, history, position.after(applied)
