"""``hashcdc replay --from DATE``: recompute a date and every later processed one, in order.

A date's run reads the state at the version of the date before it, and a date the state
already holds is undone first (the state restored to that version: its
``prepare_state_commit`` pre-hook), so replaying needs nothing deleted up front: the
dates are re-run in ascending order, each one applied to the state the previous step has
just written. The processed dates of a table are the dates its state holds (its Delta
log: :mod:`hashcdc.state.versions`) and its history partitions.
The retained inputs (the landing files) must still be there; a replay that stops (missing
extract, bad input, crash) leaves every date before the failing one recomputed, and is
resumed with ``--from`` that date.
"""

from __future__ import annotations

from typing import Any

from hashcdc.errors import HashcdcError
from hashcdc.relations import Relations
from hashcdc.state.versions import applied_versions, member_applied_versions


def _relation_exists(spark: Any, name: str) -> bool:
    return bool(spark.catalog.tableExists(name))


def processed_dates(
    spark: Any, table: str, group: str | None = None
) -> tuple[list[str], list[str]]:
    """(dates the state can be restored to, all processed dates) of a table, ascending.

    ``group``: the table group the table is a member of; its dates are its own in the
    group's state (a member replayed or rerun alone has dates its siblings do not).
    """
    state, history = Relations(group or table).state, Relations(table).history
    if not _relation_exists(spark, state):
        return [], []
    applied = (
        member_applied_versions(spark, state, [table])[table]
        if group
        else applied_versions(spark, state)
    )
    snapshots = [a.business_date for a in applied]
    dates = set(snapshots)
    if _relation_exists(spark, history):
        dates |= {
            str(row[0])
            for row in spark.sql(f"select distinct business_date from {history}").collect()
        }
    return snapshots, sorted(dates)


def replay_plan(
    spark: Any, tables: list[str], from_date: str, groups: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """Business date -> the tables to re-run for it, for every processed date >= from_date.

    ``groups``: each table group member's group.

    Raises
    ------
    HashcdcError
        When the state snapshot a replay would start from is no longer kept.

    """
    plan: dict[str, list[str]] = {}
    for table in tables:
        snapshots, dates = processed_dates(spark, table, (groups or {}).get(table))
        replayed = [d for d in dates if d >= from_date]
        if not replayed:
            continue
        starts_from_scratch = replayed[0] == dates[0]
        if not starts_from_scratch and not any(d < from_date for d in snapshots):
            earliest = min((d for d in dates if snapshots and d > snapshots[0]), default=None)
            raise HashcdcError(
                f"table '{table}': the state before {from_date} is no longer kept (the oldest "
                f"version kept is of {snapshots[0] if snapshots else 'none'}), so the replay "
                "cannot start there. Replay from "
                f"{earliest or dates[0]} or later, or from {dates[0]} (the first processed "
                "date) to rebuild the table from all its extracts."
            )
        for business_date in replayed:
            plan.setdefault(business_date, []).append(table)
    return plan
