"""The stage of a table group: every member's extract cast and hashed by its own config.

Called by the generated dbt Python model ``stg_<group>``. Each member's rows are built by
:func:`hashcdc.pipeline.stage.typecast_and_hash` exactly as a table of its own (its
reader, casts, hashes and reject reasons) and put on the group's typed slots
(:mod:`hashcdc.groups.slots`) with the member's name in ``table_name``; the members' rows
are one DataFrame, kept in the session as one stage. Its checks
(:func:`hashcdc.pipeline.checks.validate_group_stage`) and rejects
(:func:`group_rejected_rows`) are a table's, per member, on :func:`member_rows`.

A member whose extract cannot be read (none for the date, a header other than its
config's) is refused, not the group: the others run (:mod:`hashcdc.groups.outcomes`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.dates import parse_business_date
from hashcdc.errors import InputDataError
from hashcdc.groups import outcomes
from hashcdc.groups.evolution import evolve_group
from hashcdc.groups.members import Group
from hashcdc.groups.slots import MEMBER_COLUMN, SlotMap
from hashcdc.pipeline.columns import (
    EVENT_COLUMNS,
    HASH_COLUMNS,
    REJECT_DETAIL_COLUMNS,
    ROW_ERRORS,
    SOURCE_FILE,
)
from hashcdc.pipeline.evolution.joining import check_joined
from hashcdc.pipeline.evolution.tables import evolve_group_images
from hashcdc.pipeline.feed import PriorState
from hashcdc.pipeline.projections import built_once
from hashcdc.pipeline.rejects import rejected_rows
from hashcdc.pipeline.stage import typecast_and_hash
from hashcdc.state.plan import DateCommand, member_plans

TRAILING = ("business_date", SOURCE_FILE, ROW_ERRORS, *REJECT_DETAIL_COLUMNS)
# Members whose DataFrames are built side by side.
BUILDERS = 8
# The temporary views a group's stage unions (one per member, replaced by the next date's).
UNION_VIEW = "hashcdc_group_member_"


def _own_columns(is_feed: bool) -> tuple[str, ...]:
    """The stage's own columns between the slots and :data:`TRAILING`: hashes (and events)."""
    return (*[c.name for c in HASH_COLUMNS], *(EVENT_COLUMNS if is_feed else ()))


def on_slots(frame: DataFrame, member: str, slot_map: SlotMap, is_feed: bool = False) -> DataFrame:
    """A member's stage rows with its columns on the group's slots (unused slots null)."""
    placed = {p.slot.name: p.column for p in slot_map.of(member)}
    slots = tuple((s.name, s.data_type) for s in slot_map.slots)
    return frame.select(
        *built_once(
            ("on_slots", member, slots, tuple(sorted(placed.items())), is_feed),
            lambda: _slot_projection(member, placed, slots, is_feed),
        )
    )


def _slot_projection(
    member: str, placed: dict[str, str], slots: tuple[tuple[str, str], ...], is_feed: bool
) -> list[Column | str]:
    """:func:`on_slots`' projection: the member's name, its slots, the stage's own columns."""
    return [
        F.lit(member).alias(MEMBER_COLUMN),
        *[
            (F.col(placed[name]) if name in placed else F.lit(None)).cast(data_type).alias(name)
            for name, data_type in slots
        ],
        *_own_columns(is_feed),
        *TRAILING,
    ]


def group_stage(
    spark: SparkSession,
    group_data: dict[str, Any],
    business_date: Any,
    command: dict[str, Any] | None = None,
    schema: str | None = None,
) -> DataFrame:
    """The stage DataFrame of the members a group's date runs (enabled, not held).

    A member whose extract cannot be read is refused (recorded, left out); when every
    member is, the date stops, naming each (nothing is written). ``schema``: the group's
    date is refused while a member has tables of its own (:func:`check_joined`), and the
    group's tables are brought to its members' columns (:func:`evolve_group`).
    """
    group = Group.from_dict(group_data)
    date = parse_business_date(business_date)
    outcomes.start(group.name, date)
    if schema:
        check_joined(spark, schema, group)
        group = evolve_group(spark, schema, group, date)
        if any(m.changelog for m in group.members):
            evolve_group_images(
                spark,
                group.relations.in_schema(schema).changelog,
                [(s.name, s.data_type) for s in group.slot_map.slots],
            )
    slot_map = group.slot_map
    names = outcomes.members_run(group.name, date, [m.name for m in group.enabled_members])
    members = [m for m in group.enabled_members if m.name in names]
    if not members:
        raise InputDataError(f"group '{group.name}': no table of it runs {date} (paused or held)")

    priors = _prior_states(spark, schema, group, date, command, [m.name for m in members])

    def member_frame(member: TableConfig) -> DataFrame | None:
        try:
            frame = typecast_and_hash(
                spark, member.to_dict(), date, command=command, prior=priors.get(member.name)
            )
        except InputDataError as refusal:
            outcomes.refuse(group.name, date, member.name, str(refusal))
            return None
        return on_slots(frame, member.name, slot_map, group.is_feed)

    # Building a member's DataFrame is thousands of calls into the JVM, each waiting on
    # its answer: side by side, the waits overlap (py4j gives each thread its own).
    with ThreadPoolExecutor(BUILDERS) as pool:
        frames = [f for f in pool.map(member_frame, members) if f is not None]
    if not frames:
        raise InputDataError("\n".join(outcomes.refused(group.name, date).values()))
    return union_all(spark, frames, f"{UNION_VIEW}{group.name}_")


def _prior_states(
    spark: SparkSession,
    schema: str | None,
    group: Group,
    date: str,
    command: dict[str, Any] | None,
    members: list[str],
) -> dict[str, PriorState]:
    """A feed group's members' states before the date, each read at its own plan's version.

    Its events are new to a member when the group's state as the member's plan reads it
    has not applied them (a member rerun alone reads its own date before).
    """
    if not group.is_feed or not schema:
        return {}
    state = group.relations.in_schema(schema).state
    asked = DateCommand.from_dict({**(command or {}), "business_date": date})
    plans = member_plans(spark, state, asked, members)
    return {
        member: PriorState.at(spark, state, plan.prior_version, member)
        for member, plan in plans.items()
    }


def union_all(spark: SparkSession, frames: list[DataFrame], prefix: str) -> DataFrame:
    """The frames' rows as one DataFrame, their columns in the same order, analysed once.

    A chain of ``union`` calls analyses the growing plan at each step (quadratic in the
    members); one ``union all`` query of temporary views (``<prefix><n>``) is one analysis.
    """
    if len(frames) == 1:
        return frames[0]
    views = []
    for number, frame in enumerate(frames):
        view = f"{prefix}{number}"
        frame.createOrReplaceTempView(view)
        views.append(f"select * from {view}")
    return spark.sql(" union all ".join(views))


def member_rows(stage: DataFrame, member: str, slot_map: SlotMap) -> DataFrame:
    """A member's rows of the group's stage with its own columns again (as its own stage)."""
    return stage.where(F.col(MEMBER_COLUMN) == member).select(
        *[F.col(p.slot.name).cast(p.data_type).alias(p.column) for p in slot_map.of(member)],
        *_own_columns(EVENT_COLUMNS[0] in stage.columns),
        *TRAILING,
    )


def group_rejected_rows(
    spark: SparkSession, stage: DataFrame, group_data: dict[str, Any], business_date: Any
) -> DataFrame:
    """The rejected rows of the group's members for ``<group>_rejects``, each naming its table."""
    group = Group.from_dict(group_data)
    slot_map = group.slot_map
    date = parse_business_date(business_date)
    run = set(outcomes.members_run(group.name, date, [m.name for m in group.enabled_members]))
    with_rejects = run & {
        row[MEMBER_COLUMN]
        for row in stage.where(F.col(ROW_ERRORS).isNotNull())
        .select(MEMBER_COLUMN)
        .distinct()
        .collect()
    }
    frames = [
        rejected_rows(
            spark,
            member_rows(stage, member.name, slot_map),
            member.to_dict(),
            business_date,
        ).select(F.lit(member.name).alias(MEMBER_COLUMN), "*")
        for member in group.enabled_members
        if member.name in with_rejects
    ]
    if not frames:
        first = group.members[0]
        empty = rejected_rows(
            spark, member_rows(stage, first.name, slot_map).limit(0), first.to_dict(), business_date
        )
        return empty.select(F.lit(None).cast("string").alias(MEMBER_COLUMN), "*")
    return reduce(DataFrame.unionByName, frames)
