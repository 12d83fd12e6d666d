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
    new_state: dict[tuple, Version] = {}
    history: list[Version] = []
    incoming = {tuple(row[k] for k in keys): row for row in extract}
    for key, row in incoming.items():
        previous = state.get(key)
        if previous is None:
            version = Version(row, "I", business_date)
            history.append(version)
        elif tuple(row[c] for c in compared) != tuple(previous.row[c] for c in compared):
            version = Version(row, "U", business_date)
            history.append(version)
        else:
            version = Version(previous.row, "N", previous.eff_start_date)
        new_state[key] = version
    for key, previous in state.items():
        if key in incoming:
            continue
        if extract_type == "full":
            history.append(Version(previous.row, "D", business_date))
        else:
            new_state[key] = Version(previous.row, "X", previous.eff_start_date)
    return new_state, history
