"""A table-date's plan: what a run of one business date does to one state, decided once.

A command asks for a date (:class:`DateCommand`: the date, and whether ``hashcdc replay``
or a micro-batch of ``hashcdc stream`` runs it); the state's log says which dates it holds
(:func:`hashcdc.state.versions.applied_versions`). From the two, :func:`plan_date` decides
the run's :class:`Mode` and all that follows from it:

- ``daily``: a date after the state's latest; the diff compares with the latest date's
  version, nothing is undone.
- ``rerun``: a date the state holds already (the latest, or with later ones under a
  replay's last date); the state is first restored to the date before it (or emptied
  when there is none), then the date is applied again to the state it was computed from.
- ``replay``: ``hashcdc replay`` running a date older than the latest; as a rerun, and
  the order check and the retention of dated rows wait for the replay's last date.
- ``micro_batch``: ``hashcdc stream`` applying the events its earlier batches of the date
  did not; on top of the state as it is, nothing undone; the date stays open.
- ``close``: a whole-date run of a date the stream left open, on top of its micro-batches
  (the date before's version read, one MERGE): readers never see the date before again.
  When a column was added since the date before, the date is rerun instead (the restore
  keeps the shape of now).

One home for these rules: the dbt macros read the plan through the adapter
(``hashcdc.date_plan``), the stage and its checks read it in Python; neither derives a
mode again. Nothing here touches Spark: :func:`plan_of` reads the log and hands it in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from hashcdc.state.versions import (
    DateVersion,
    applied_versions,
    member_applied_versions,
    same_shape_at,
    version_before,
)


class Mode(StrEnum):
    """What a run does to a state's date (see the module's text)."""

    DAILY = "daily"
    RERUN = "rerun"
    REPLAY = "replay"
    MICRO_BATCH = "micro_batch"
    CLOSE = "close"


@dataclass(frozen=True)
class DateCommand:
    """What a command asks of a table-date: the facts a plan is made from.

    ``files``: a micro-batch's files, those of the date's the stream has not read before
    (None: all of the date's).
    """

    business_date: str
    replay: bool = False
    micro_batch: bool = False
    files: tuple[str, ...] | None = None

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> DateCommand:
        """The command as the ``date_command`` macro renders it into a Python model."""
        files = document.get("files")
        return cls(
            str(document["business_date"]),
            bool(document.get("replay")),
            bool(document.get("micro_batch")),
            None if files is None else tuple(files),
        )


@dataclass(frozen=True)
class PreviousState:
    """What a date's diff compares with: the date before and where its rows are read.

    ``last_version`` None: the state as it is when the diff runs (after a rerun's restore,
    or on top of a micro-batch's earlier commits); else read ``version as of`` it.
    ``business_date`` None: no date before (a micro-batch on top of the first date's).
    """

    business_date: str | None
    version: int | None
    last_version: int | None


@dataclass(frozen=True)
class DatePlan:
    """A table-date's plan (:func:`plan_date`)."""

    command: DateCommand
    mode: Mode
    # The state's latest date before this one (None: none, or no state yet).
    before: DateVersion | None
    # What the diff compares with (None: nothing, the first date of a new state).
    previous: PreviousState | None
    # Before the date is applied: restore this version (a rerun, a replay) ...
    restores: int | None
    # ... or empty the state (a rerun of its first date).
    empties: bool
    # The version a change feed's stage reads its watermarks from (None: no state yet).
    prior_version: int | None
    # Why a writing command must not run the date (None: it may): out of order, or after
    # a date the stream left open.
    refusal: str | None

    @property
    def business_date(self) -> str:
        """The date planned."""
        return self.command.business_date

    @property
    def micro_batch(self) -> bool:
        """Whether the date's commit is a micro-batch of the stream (it stays open)."""
        return self.mode is Mode.MICRO_BATCH

    @property
    def closes(self) -> bool:
        """Whether the run closes an open date on top of its micro-batches."""
        return self.mode is Mode.CLOSE

    def to_macro(self) -> dict[str, Any]:
        """The plan as the macros read it: plain values, ``mode`` as text."""
        document = asdict(self)
        document["mode"] = str(self.mode)
        document["business_date"] = self.business_date
        document["micro_batch"] = self.micro_batch
        document["closes"] = self.closes
        return document


def _refusal(command: DateCommand, latest: DateVersion | None, table_name: str) -> str | None:
    """The message that refuses an out-of-order date, or one after an open date."""
    if latest is None:
        return None
    date = command.business_date
    if latest.business_date > date and not command.replay:
        return (
            f"table '{table_name}': business date {date} is older than the latest processed "
            f"date {latest.business_date}; processing it now would rewrite history out of "
            f"order. Nothing was written. Run the dates after {latest.business_date} instead, "
            f"or recompute from this date on with `hashcdc replay --from {date}`."
        )
    if latest.business_date < date and latest.is_open and not command.replay:
        # A date the stream applied has no history until a whole-date run closes it;
        # moving past it would leave it without one.
        return (
            f"table '{table_name}': business date {latest.business_date} was applied by "
            "`hashcdc stream` and is still open (its history, tests and audit are written "
            f"when it closes). Nothing was written for {date}. Close it first with "
            f"`hashcdc run --date {latest.business_date} --select {table_name}`, then run "
            f"{date}."
        )
    return None


def plan_date(
    command: DateCommand,
    applied: Sequence[DateVersion],
    same_shape: Callable[[int], bool],
    table_name: str = "",
) -> DatePlan:
    """The plan of ``command`` on a state that holds ``applied`` (its dates, in order).

    ``same_shape(version)``: whether the state's columns now are those of ``version``
    (asked only of an open date's run: a column added since the date before means the
    date is rerun, not closed on top).
    """
    date = command.business_date
    latest = applied[-1] if applied else None
    before = version_before(list(applied), date)
    holds = latest is not None and latest.business_date >= date
    on_top = command.micro_batch and latest is not None and latest.business_date == date
    closes = (
        not command.micro_batch
        and not command.replay
        and latest is not None
        and latest.business_date == date
        and latest.is_open
        and (before is None or same_shape(before.last_version))
    )
    if command.micro_batch:
        mode = Mode.MICRO_BATCH
    elif closes:
        mode = Mode.CLOSE
    elif command.replay:
        mode = Mode.REPLAY
    elif holds:
        mode = Mode.RERUN
    else:
        mode = Mode.DAILY
    undoes = holds and not on_top and not closes
    if before is None:
        # A micro-batch on top of the first date's earlier ones compares with the table.
        previous = PreviousState(None, None, None) if command.micro_batch and applied else None
    else:
        # A rerun or a micro-batch on top reads the table as the restore leaves it, or as
        # it is: the date before's own version may lack a column added or widened later.
        reads_as_is = holds and not closes
        previous = PreviousState(
            before.business_date,
            before.version,
            None if reads_as_is else before.last_version,
        )
    on_top_of = latest if on_top else before
    return DatePlan(
        command=command,
        mode=mode,
        before=before,
        previous=previous,
        restores=before.last_version if undoes and before is not None else None,
        empties=undoes and before is None,
        prior_version=on_top_of.last_version if on_top_of is not None else None,
        refusal=_refusal(command, latest, table_name),
    )


def member_restores(
    spark: Any, state: str, command: DateCommand, members: Sequence[str]
) -> dict[str, int | None]:
    """What a table group's date undoes first, member by member.

    Member -> the version its rows are put back to (None: it has no date before, its rows
    are removed).

    Each member's own plan decides, from the dates it holds (its rerun, replay or refusal
    alone makes them part from its siblings'); a member whose plan undoes nothing is left
    out. The group's one plan decides the rest (the mode, what the diff reads).
    """
    undone: dict[str, int | None] = {}
    for member, plan in member_plans(spark, state, command, members).items():
        if plan.restores is not None or plan.empties:
            undone[member] = plan.restores
    return undone


def member_plans(
    spark: Any, state: str, command: DateCommand, members: Sequence[str]
) -> dict[str, DatePlan]:
    """Each member's own plan of ``command`` on a table group's state (one read of its log).

    A member's rerun, replay or refusal is its own; so is the version a change feed's
    events are read against (``prior_version``).
    """
    exists = spark.catalog.tableExists(state)
    applied = member_applied_versions(spark, state, members) if exists else {}
    return {
        member: plan_date(
            command,
            applied.get(member, []),
            lambda version: same_shape_at(spark, state, version),
            member,
        )
        for member in members
    }


def plan_of(spark: Any, state: str | None, command: DateCommand, table_name: str = "") -> DatePlan:
    """The plan of ``command`` on the state table ``state`` as its log is now."""
    exists = state is not None and spark.catalog.tableExists(state)
    applied = applied_versions(spark, state) if exists else []
    return plan_date(
        command, applied, lambda version: same_shape_at(spark, state, version), table_name
    )
