"""Which members of a group a date runs: refused by their checks, or held by the command.

A member whose extract cannot be loaded (none for the date, a header that is not its
config's, rejects above its limits, a key twice) is **refused**: its rows are left out of
the group's diff and commit, so its previous state stays as it was, and its siblings are
committed. The group's stage records why (:func:`refuse`, from
:mod:`hashcdc.pipeline.group_stage` and :func:`hashcdc.pipeline.checks.validate_group_stage`);
a member whose full extract would delete more than its ``max_delete_fraction`` is
refused by the group's state (the ``refuse_mass_deletes`` post-hook: the diff left it out
of the commit); the models after it run the other members (:func:`members_run`, through
the adapter), the
audit gives the refused member a failed row with the reason, and the group's
``members_applied`` test fails naming it.

A member is **held** when the command that runs the group must not apply this date to it:
``hashcdc run`` of several dates holds a member that failed an earlier date of the run (its
dates apply in order), as it skips a table of its own (:func:`holding`).

The engine runs the models of one dbt invocation in this process, so the facts are kept
here, per group and business date, until the group's next stage for the date replaces them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_refused: dict[tuple[str, str], dict[str, str]] = {}
_held: set[str] = set()


def start(group: str, business_date: str) -> None:
    """Forget what an earlier stage of the group's date refused (a rerun checks again)."""
    with _lock:
        _refused.pop((group, business_date), None)


def refuse(group: str, business_date: str, member: str, reason: str) -> None:
    """Record that a member of the group does not run the date, and why."""
    with _lock:
        _refused.setdefault((group, business_date), {})[member] = reason


def refused(group: str, business_date: str) -> dict[str, str]:
    """The members the group's stage refused for the date -> why, in member order."""
    with _lock:
        return dict(sorted(_refused.get((group, business_date), {}).items()))


def held() -> frozenset[str]:
    """The tables the running command holds back from the date."""
    with _lock:
        return frozenset(_held)


@contextmanager
def holding(tables: Iterable[str]) -> Iterator[None]:
    """Hold these tables back from the dates run inside the block."""
    names = set(tables) - held()
    with _lock:
        _held.update(names)
    try:
        yield
    finally:
        with _lock:
            _held.difference_update(names)


def members_run(group: str, business_date: str, members: Iterable[str]) -> list[str]:
    """Of ``members`` (the group's enabled ones), those the date runs: not held, not refused."""
    left_out = held() | set(refused(group, business_date))
    return [m for m in members if m not in left_out]
