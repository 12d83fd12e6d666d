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

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
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
    SENSITIVE_HASH,
    SOURCE_FILE,
)
from hashcdc.pipeline.evolution.joining import check_joined
from hashcdc.pipeline.evolution.tables import evolve_group_images
from hashcdc.pipeline.extract import read_event_lines
from hashcdc.pipeline.feed import PriorState, placeholder_mentions
from hashcdc.pipeline.inputs import table_reader
from hashcdc.pipeline.projections import selected, union_all
from hashcdc.pipeline.rejects import rejected_rows
from hashcdc.pipeline.stage import Screened, date_command, date_files, typecast_and_hash
from hashcdc.pipeline.transports import transport_of
from hashcdc.state.plan import member_plans

TRAILING = ("business_date", SOURCE_FILE, ROW_ERRORS, *REJECT_DETAIL_COLUMNS)
# Members whose DataFrames are built side by side.
BUILDERS = 8
# The temporary views a group's stage unions (one per member, replaced by the next date's).
UNION_VIEW = "hashcdc_group_member_"
# A table's settings its stage's plan does not use: members differing only in these (and
# their names and locations) are read by one plan.
NOT_IN_STAGE = (
    "name",
    "description",
    "config_file",
    "expected_counts_seed",
    "enabled",
    "history_retention_days",
    "rejects_retention_days",
    "max_delete_fraction",
    "max_reject_fraction",
    "max_rejects",
    "changelog",
    "slo",
    "retry_for",
    "sensitive_grants",
)


def _own_columns(is_feed: bool, sensitive: bool = False) -> tuple[str, ...]:
    """The stage's own columns between the slots and :data:`TRAILING`: hashes (and events).

    ``sensitive``: the group has members with sensitive columns (their ``sensitive_hash``).
    """
    return (
        *[c.name for c in HASH_COLUMNS],
        *((SENSITIVE_HASH,) if sensitive else ()),
        *(EVENT_COLUMNS if is_feed else ()),
    )


def on_slots(
    frame: DataFrame,
    member: str,
    slot_map: SlotMap,
    is_feed: bool = False,
    named_by: Column | None = None,
) -> DataFrame:
    """A member's stage rows with its columns on the group's slots (unused slots null).

    ``slot_map``: the group's stage's (:attr:`Group.stage_slot_map`); where it has slots of
    sensitive columns, the rows carry ``sensitive_hash`` (null for a member without them).
    ``named_by``: the rows are of several members placed as ``member`` is, each named by
    this column (:func:`_read_together`).
    """
    placed = {p.slot.name: p.column for p in slot_map.of(member)}
    slots = tuple((s.name, s.data_type) for s in slot_map.slots)
    sensitive = slot_map.holds_sensitive()
    own = _own_columns(is_feed, sensitive)
    if sensitive and not slot_map.holds_sensitive(member):
        own = tuple(
            F.lit(None).cast("binary").alias(name) if name == SENSITIVE_HASH else name
            for name in own
        )
    if named_by is not None:
        return frame.select(*_slot_projection(named_by, placed, slots, own))
    return selected(
        frame,
        ("on_slots", member, slots, tuple(sorted(placed.items())), is_feed),
        lambda: _slot_projection(F.lit(member), placed, slots, own),
    )


def _slot_projection(
    member: Column,
    placed: dict[str, str],
    slots: tuple[tuple[str, str], ...],
    own: Sequence[Column | str],
) -> list[Column | str]:
    """:func:`on_slots`' projection: the member's name, its slots, the stage's own columns."""
    return [
        member.alias(MEMBER_COLUMN),
        *[
            (F.col(placed[name]) if name in placed else F.lit(None)).cast(data_type).alias(name)
            for name, data_type in slots
        ],
        *own,
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
    slot_map, stage_slots = group.slot_map, group.stage_slot_map
    names = outcomes.members_run(group.name, date, [m.name for m in group.enabled_members])
    members = [m for m in group.enabled_members if m.name in names]
    if not members:
        raise InputDataError(f"group '{group.name}': no table of it runs {date} (paused or held)")

    screened, units = _screened(spark, group.name, members, date, command, stage_slots)
    members = [m for m in members if m.name in screened]
    prior = _prior_state(spark, schema, group, date, command, [m.name for m in members])
    # A member whose events fill unavailable values marks them itself (the fill reads
    # which are new); the group marks every member's in one pass after the union.
    priors = {
        m.name: _member_prior(prior, m.name, slot_map)
        if screened[m.name].placeholders is not False
        else PriorState(None, deferred=True)
        for m in members
    }

    def member_frame(member: TableConfig) -> DataFrame | None:
        try:
            frame = typecast_and_hash(
                spark,
                member.to_dict(),
                date,
                command=command,
                prior=priors[member.name],
                screened=screened[member.name],
            )
        except InputDataError as refusal:
            outcomes.refuse(group.name, date, member.name, str(refusal))
            return None
        return on_slots(frame, member.name, stage_slots, group.is_feed)

    def fits(member: TableConfig) -> bool:
        try:
            extract = screened[member.name]
            table_reader(member).check_extract(spark, member, extract.files, date, extract.sampled)
        except InputDataError as refusal:
            outcomes.refuse(group.name, date, member.name, str(refusal))
            return False
        return True

    def together_frame(unit: Together) -> DataFrame | None:
        alike = [m for m in unit.members if fitting[m.name]]
        if not alike:
            return None
        files = [f for m in alike for f in screened[m.name].files]
        first, named_by = alike[0], unit.named_by
        assert named_by is not None
        lines = unit.lines
        if lines is not None:  # read for all the kind: of these members only
            lines = lines.where(named_by.isin(*[m.name for m in alike]))
        try:
            frame = typecast_and_hash(
                spark,
                first.to_dict(),
                date,
                command=command,
                prior=PriorState(None, deferred=True),
                screened=Screened(files, placeholders=False, lines=lines, checked=True),
            )
        except InputDataError as refusal:
            for member in alike:
                outcomes.refuse(group.name, date, member.name, str(refusal))
            return None
        return on_slots(frame, first.name, stage_slots, group.is_feed, named_by)

    def unit_frame(unit: Together) -> DataFrame | None:
        return member_frame(unit.members[0]) if unit.named_by is None else together_frame(unit)

    # Building a member's DataFrame is thousands of calls into the JVM, each waiting on
    # its answer: side by side, the waits overlap (py4j gives each thread its own).
    with ThreadPoolExecutor(BUILDERS) as pool:
        together = [m for unit in units if unit.named_by is not None for m in unit.members]
        fitting = dict(zip([m.name for m in together], pool.map(fits, together), strict=True))
        frames = [f for f in pool.map(unit_frame, units) if f is not None]
    if not frames:
        raise InputDataError("\n".join(outcomes.refused(group.name, date).values()))
    stage = union_all(spark, frames, f"{UNION_VIEW}{group.name}_")
    if not group.is_feed:
        return stage
    partitioned = transport_of(members[0]).partitioned
    marked = prior.mark_new_events(stage.drop("is_new_event"), partitioned, (MEMBER_COLUMN,))
    return marked.select(*stage.columns)


@dataclass(frozen=True)
class Together:
    """Members whose stage is one plan over their extracts (a member alone: its own plan).

    ``named_by``: what names a row's member, from its source (None: one member);
    ``lines``: their files' lines, read once for the checks' scans and the events (None:
    their reader's lines are not its events).
    """

    members: list[TableConfig]
    named_by: Column | None = None
    lines: DataFrame | None = None


def _read_together(
    extracts: list[tuple[TableConfig, list[str]]], slot_map: SlotMap
) -> list[Together]:
    """The members read, cast and hashed by one plan, and what names a row's member.

    Members whose configs differ only in what the stage's plan does not use (their names,
    places, limits, retention: :data:`NOT_IN_STAGE`) and whose columns sit on the same
    slots are read as one table whose rows are named by the member their file (topic) is
    of (their transport's ``source_member``). A member alone of its kind, or of a kind
    whose transport cannot tell the files apart, builds its own plan.
    """
    kinds: dict[str, list[tuple[TableConfig, list[str]]]] = {}
    for member, files in extracts:
        kinds.setdefault(_stage_signature(member, slot_map), []).append((member, files))
    units = []
    for kind in kinds.values():
        named_by = None
        if len(kind) > 1:
            named_by = transport_of(kind[0][0]).source_member({m.name: f for m, f in kind})
        if named_by is None:
            units += [Together([m]) for m, _ in kind]
        else:
            units.append(Together([m for m, _ in kind], named_by))
    return units


def _stage_signature(member: TableConfig, slot_map: SlotMap) -> str:
    """What a member's stage plan is built of (its files aside), as text to compare."""
    plan = {k: v for k, v in member.to_dict().items() if k not in NOT_IN_STAGE}
    plan["columns"] = [{k: v for k, v in c.items() if k != "description"} for c in plan["columns"]]
    # Where a member's extract is (its folder, its topic, its captured table) is its own.
    source = plan["source"] = {**plan["source"], "path": None}
    if source.get("kafka"):
        source["kafka"] = {**source["kafka"], "topic": None}
    if source.get("database"):
        source["database"] = {**source["database"], "table": None, "query": None}
    placed = [(p.column, p.slot.name) for p in slot_map.of(member.name)]
    return json.dumps([plan, placed], sort_keys=True, default=str)


def _screened(
    spark: SparkSession,
    group: str,
    members: list[TableConfig],
    date: str,
    command: dict[str, Any] | None,
    slot_map: SlotMap,
) -> tuple[dict[str, Screened], list[Together]]:
    """Each member's locations and what its checks read of them; the members read together.

    The locations are listed side by side (a member without an extract is refused, left
    out); the fields a sample of each member's rows carries, and whether a feed's events
    mention its unavailable-value placeholder, are one query each over every member's
    files, not one per member, and members read together are scanned together. A member
    whose events mention the placeholder fills them from its own prior rows: it builds
    its own plan.
    """
    asked = date_command(command, date)

    def listed(member: TableConfig) -> tuple[TableConfig, list[str] | None]:
        try:
            return member, date_files(spark, member, date, asked)
        except InputDataError as refusal:
            outcomes.refuse(group, date, member.name, str(refusal))
            return member, None

    with ThreadPoolExecutor(BUILDERS) as pool:
        extracts = [(m, files) for m, files in pool.map(listed, members) if files is not None]
    files = {m.name: f for m, f in extracts}
    # A unit's lines are read once: its placeholder scan, its events (alone: its sample).
    units = [
        replace(
            unit,
            lines=read_event_lines(
                spark, unit.members[0], [f for m in unit.members for f in files[m.name]]
            ),
        )
        if table_reader(unit.members[0]).line_holds_event
        else unit
        for unit in _read_together(extracts, slot_map)
    ]
    prefix = f"{UNION_VIEW}{group}_"
    sampled = _sampled_fields(spark, units, files, f"{prefix}sample_")
    mentioned = _placeholders_mentioned(spark, units, f"{prefix}placeholder_")
    kept: list[Together] = []
    for unit in units:
        own = [m for m in unit.members if mentioned.get(m.name) is not False]
        if unit.named_by is None or not own:
            kept.append(unit)
            continue
        kept += [Together([m]) for m in own]
        rest = [m for m in unit.members if m not in own]
        if rest:
            kept.append(replace(unit, members=rest))
    screened = {
        m.name: Screened(
            files[m.name],
            sampled.get(m.name),
            mentioned.get(m.name),
            unit.lines if unit.named_by is None else None,
        )
        for unit in kept
        for m in unit.members
    }
    return screened, kept


def _sampled_fields(
    spark: SparkSession, units: list[Together], files: dict[str, list[str]], prefix: str
) -> dict[str, list[str]]:
    """Each member's sampled fields (its reader's ``column_sample``), in one query.

    Members read together are sampled together: the lines of each one's first location.
    """
    frames, fields = [], {}
    for unit in units:
        first = unit.members[0]
        reader = table_reader(first)
        if unit.named_by is None:
            sample = reader.column_sample(spark, first, files[first.name], unit.lines)
            named = None
            if sample is not None:
                named = sample.select(F.lit(first.name).alias(MEMBER_COLUMN), "key")
        else:
            firsts = [files[m.name][0] for m in unit.members]
            lines = read_event_lines(spark, first, firsts) if reader.line_holds_event else None
            named = reader.column_sample(spark, first, firsts, lines, by=unit.named_by)
        if named is not None:
            frames.append(named)
            fields.update({m.name: [] for m in unit.members})
    if frames:
        for row in union_all(spark, frames, prefix).collect():
            fields[row[MEMBER_COLUMN]].append(row["key"])
    return fields


def _placeholders_mentioned(
    spark: SparkSession, units: list[Together], prefix: str
) -> dict[str, bool]:
    """Whether each feed's events mention its unavailable-value placeholder, in one query.

    A scan of the lines' text (:func:`hashcdc.pipeline.feed.typed_events` fills the values
    of a feed whose events do); a feed whose placeholder is off, or without a key, does
    not; one whose lines are not its events, or whose placeholder's forms do not show as
    they are in JSON, is left out (it looks itself).
    """
    frames, mentioned = [], {}
    for unit in units:
        first = unit.members[0]
        placeholder = first.changes.unavailable_value if first.changes is not None else None
        if placeholder is None or first.is_keyless:
            mentioned.update(dict.fromkeys([m.name for m in unit.members], False))
            continue
        mentions = placeholder_mentions(first)
        if mentions is None:
            continue
        # Its reader's lines are its events (placeholder_mentions says none otherwise).
        assert unit.lines is not None
        if unit.named_by is None:
            found = unit.lines.where(mentions).limit(1).select(F.lit(first.name))
        else:
            found = unit.lines.where(mentions).select(unit.named_by).distinct()
        frames.append(found.toDF(MEMBER_COLUMN))
        mentioned.update(dict.fromkeys([m.name for m in unit.members], False))
    if frames:
        for row in union_all(spark, frames, prefix).collect():
            mentioned[row[MEMBER_COLUMN]] = True
    return mentioned


def _prior_state(
    spark: SparkSession,
    schema: str | None,
    group: Group,
    date: str,
    command: dict[str, Any] | None,
    members: list[str],
) -> PriorState:
    """A feed group's state before the date: each member's rows at its own plan's version.

    Its events are new to a member when the group's state as the member's plan reads it
    has not applied them (a member rerun alone reads its own date before). Members read
    at one version share its read (mostly one: the group's latest).
    """
    if not group.is_feed or not schema:
        return PriorState(None)
    state = group.relations.in_schema(schema).state
    plans = member_plans(spark, state, date_command(command, date), members)
    at: dict[int | None, list[str]] = {}
    for member, plan in plans.items():
        at.setdefault(plan.prior_version, []).append(member)
    parts = [
        read.rows.where(F.col(MEMBER_COLUMN).isin(*names))
        for version, names in at.items()
        if (read := PriorState.at(spark, state, version)).rows is not None
    ]
    return PriorState(reduce(DataFrame.unionByName, parts) if parts else None)


def member_rows(stage: DataFrame, member: str, slot_map: SlotMap) -> DataFrame:
    """A member's rows of the group's stage with its own columns again (as its own stage).

    ``slot_map``: the stage's (:attr:`Group.stage_slot_map`).
    """
    columns = stage.columns
    return stage.where(F.col(MEMBER_COLUMN) == member).select(
        *_named_back(member, slot_map),
        *_own_columns(EVENT_COLUMNS[0] in columns, SENSITIVE_HASH in columns),
        *TRAILING,
    )


def _member_prior(prior: PriorState, member: str, slot_map: SlotMap) -> PriorState:
    """A member's rows of the group's state before the date, with its own columns again.

    A feed that fills unavailable values reads its previous values by its columns' names.
    """
    own = prior.of_member(member)
    if own.rows is None:
        return own
    slots = {s.name for s in slot_map.slots}
    kept = [c for c in own.rows.columns if c not in slots]
    return PriorState(own.rows.select(*kept, *_named_back(member, slot_map)))


def _named_back(member: str, slot_map: SlotMap) -> list[Column]:
    """A member's columns from the group's slots, named and typed as in its config."""
    return [F.col(p.slot.name).cast(p.data_type).alias(p.column) for p in slot_map.of(member)]


def group_rejected_rows(
    spark: SparkSession, stage: DataFrame, group_data: dict[str, Any], business_date: Any
) -> DataFrame:
    """The rejected rows of the group's members for ``<group>_rejects``, each naming its table."""
    group = Group.from_dict(group_data)
    slot_map = group.stage_slot_map
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
