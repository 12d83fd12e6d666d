"""Tables that ran on their own, taken into the group their configs now name.

A table that ran on its own has its own state, history and rejects (``<t>_state``,
``<t>_history``, ``<t>_rejects``) and views over them. When its config gains ``group:``,
the group's tables take them over before the command's dbt invocations
(:func:`join_group`: ``hashcdc run``, ``replay`` and ``upgrade``), so the table goes on
from its latest date as if it had always been a member:

- **its dates and versions**: each date its state holds becomes one commit of the group's
  state that applies that date to the members that hold it (``hashcdc_members``), with
  each member's rows as its own state held them then, on the group's slots. A member's
  rerun, replay, ``--as-of`` and retention read these commits as any of the group's
  (:func:`hashcdc.state.versions.effective_commits`). Into a new group the members' dates
  are merged in date order; into a group that has run dates they come after the group's
  in its log, which the group's own dates are read in date order from
  (:func:`hashcdc.state.versions.applied_from_history`);
- **its history, rejects and changelog**: every date's rows, each naming its table;
- **what its state records**: the columns added to it (``hashcdc.added.<table>.<column>``);
- **its sensitive tables** (``<t>_sensitive_state``, ``_history``), the same way into the
  group's (``<group>_sensitive_state``, ``_history``, on the sensitive slots), before the
  main state, whose slot map records the join as done.

A new group's state is written beside its name and renamed into place last; a group that
has run dates records the member in its slot map (``hashcdc.slots``) once all its dates
are in. Until then the group's stage refuses the date (:func:`check_joined`) and the next
command goes on from the dates the group holds (the history and rejects replace the
member's rows, so a second copy replaces the first). The members' own tables are dropped
last (a run killed before drops them the next time), so dbt never meets a table where a
member's view goes (dbt-spark drops a table in a view's way: a member's history would be
lost without the copy).
"""

from __future__ import annotations

import sys
from typing import Any

from hashcdc.errors import InputDataError
from hashcdc.groups.evolution import add_slots, recorded_slots, slots_property
from hashcdc.groups.members import Group
from hashcdc.groups.slots import MEMBER_COLUMN, SlotMap
from hashcdc.pipeline.columns import HISTORY_OWN_COLUMNS, STATE_OWN_COLUMNS
from hashcdc.pipeline.evolution.tables import REWRITE_SUFFIX, evolve_group_images
from hashcdc.pipeline.hashing import HASH_ALGORITHM_VERSION
from hashcdc.relations import Relations
from hashcdc.state.versions import (
    ADDED_PROPERTY_PREFIX,
    COMMIT_METADATA_SETTING,
    HASH_VERSION_PROPERTY,
    SLOTS_PROPERTY,
    DateVersion,
    applied_versions,
    commit_metadata,
    group_members,
    group_state_properties,
    history_properties,
    is_delta,
    member_applied_versions,
    relation_names,
    table_properties,
)


def own_states(
    spark: Any, schema: str, group: Group, names: list[str] | None = None
) -> dict[str, Relations]:
    """The members that have a state of their own (a Delta table), with their relations.

    ``names``: of these members only (None: all). One listing of the schema, not a
    look-up per member.
    """
    members = [m for m in group.members if names is None or m.name in names]
    if not members:
        return {}
    listed = relation_names(spark, schema)
    found = {}
    for member in members:
        own = member.relations.in_schema(schema)
        if own.state.rsplit(".", 1)[-1] in listed and is_delta(spark, own.state):
            found[member.name] = own
    return found


def check_joined(spark: Any, schema: str, group: Group) -> None:
    """Refuse a group's date while a member has its own state not taken into the group's.

    The group's stage asks before anything is written: dbt would otherwise replace the
    member's own history with its view, and compare its extract with no state.

    Raises
    ------
    InputDataError
        Naming each such member and what to do.

    """
    relations = group.relations.in_schema(schema)
    exists = spark.catalog.tableExists(relations.state)
    # A member the group's state records has run in the group: only the others are asked
    # (a group whose members all ran in it lists nothing, its every date).
    recorded = group_members(table_properties(spark, relations.state)) if exists else []
    own = own_states(
        spark, schema, group, [m.name for m in group.members if m.name not in recorded]
    )
    if not own:
        return
    names = ", ".join(f"'{m}'" for m in own)
    raise InputDataError(
        f"table(s) {names} ran on their own and their configs now name group "
        f"'{group.name}': `hashcdc run` (or `hashcdc upgrade`) takes them into the group's "
        "tables first, with their dates, history and rejects; a `dbt build` alone does "
        "not. Nothing was written. Run `hashcdc upgrade`, then the date again."
    )


def join_group(spark: Any, schema: str, group: Group, views: bool = False) -> list[str]:
    """Take the members that ran on their own into the group's tables; their names.

    Before a command's dbt invocations (``hashcdc run``, ``replay``, ``upgrade``): dbt
    lists a schema's relations once, when it starts. Into a new group, the members' dates
    are merged in date order into a state written beside its name and renamed into place;
    into a group that has run dates, each member's dates are appended after the group's,
    and the state records the member (``hashcdc.slots``) once they all are. A join killed
    half-way goes on from the dates the group holds. ``views``: the members' own views are
    dropped too (``hashcdc upgrade``; the next date's run builds the member's views under
    their names, and replaces them itself).

    Raises
    ------
    InputDataError
        When a member's own state was hashed by another version of hashcdc's hashes.

    """
    own = own_states(spark, schema, group)
    if not own:
        return []
    relations = group.relations.in_schema(schema)
    for member, tables in own.items():
        _check_hashes(spark, group, member, tables.state)
    slot_map = group.slot_map
    if spark.catalog.tableExists(relations.state):
        evolve_group_images(
            spark, relations.changelog, [(s.name, s.data_type) for s in slot_map.slots]
        )
    _copy_dated(
        spark,
        relations.rejects,
        {m: _on_slots(spark, r.rejects, m, slot_map, None) for m, r in own.items()},
        {},
    )
    _copy_dated(
        spark,
        relations.changelog,
        {
            m: _images_on_slots(spark, r.changelog, m, slot_map)
            for m, r in own.items()
            if m in _keeping_changelog(group)
        },
        history_properties(),
    )
    sensitive = _keeping_sensitive(spark, group, own)
    if sensitive:
        # Before the main state, whose slot map records the join as done.
        _join_tables(
            spark,
            group,
            (relations.sensitive_state, relations.sensitive_history),
            {m: (own[m].sensitive_state, own[m].sensitive_history) for m in sensitive},
            group.sensitive_slot_map,
        )
    held = _join_tables(
        spark,
        group,
        (relations.state, relations.history),
        {m: (r.state, r.history) for m, r in own.items()},
        slot_map,
    )
    _drop_own(spark, own, views, _keeping_changelog(group), sensitive)
    for member in own:
        applied = held[member]
        span = f"{applied[0].business_date} to {applied[-1].business_date}" if applied else "none"
        print(
            f"hashcdc: table '{member}' joined group '{group.name}': its dates ({span}), "
            f"history and rejects are the group's now ({relations.state}, {relations.history}, "
            f"{relations.rejects}); its own tables were dropped"
            + (
                " with its views (the next `hashcdc run` builds its views on the group's)"
                if views
                else ""
            ),
            file=sys.stdout,
            flush=True,
        )
    return sorted(own)


def _check_hashes(spark: Any, group: Group, member: str, state: str) -> None:
    """A member's own state must hold the hashes the group's stage computes."""
    version = table_properties(spark, state).get(HASH_VERSION_PROPERTY)
    if version is not None and version != str(HASH_ALGORITHM_VERSION):
        raise InputDataError(
            f"table '{member}': its own state {state} holds hashes of version {version}, "
            f"and group '{group.name}' computes version {HASH_ALGORITHM_VERSION}: its rows "
            "would all read as updates. Nothing was written. Run a date of it on its own "
            "first (remove `group:` from its config), which brings its hashes to this "
            "version, then put it back in the group."
        )


def _on_slots(
    spark: Any,
    table: str,
    member: str,
    slot_map: SlotMap,
    own: tuple[str, ...] | None,
    version: int | None = None,
) -> str | None:
    """A select of a member's rows of ``table`` on the group's slots, then hashcdc's columns.

    ``own``: hashcdc's columns after the slots (None: every column of ``table``, as the
    rejects keep them); a column ``table`` lacks (added later) is null. ``version``: the
    table as of that version. None when there is no ``table``.
    """
    if not spark.catalog.tableExists(table):
        return None
    source = table if version is None else f"{table} version as of {version}"
    had = {f.name for f in spark.sql(f"select * from {source} limit 0").schema.fields}
    slots = (
        [f"{value} as `{slot}`" for slot, value in _slot_values(slot_map, member, had)]
        if own is not None
        else []
    )
    trailing = ["*"] if own is None else [f"`{c}`" for c in own]
    listed = ", ".join([f"'{member}' as {MEMBER_COLUMN}", *slots, *trailing])
    return f"select {listed} from {source}"


def _slot_values(
    slot_map: SlotMap, member: str, had: set[str], struct: str = ""
) -> list[tuple[str, str]]:
    """Each slot of the group and its value in a member's row: (slot, expression).

    A slot the member's column sits on, that column (of ``struct``, an image) cast to the
    slot's type when the source ``had`` it (a column added later is null); any other, null.
    """
    placed = {p.slot.name: p.column for p in slot_map.of(member)}
    prefix = f"{struct}." if struct else ""
    return [
        (
            s.name,
            f"cast({prefix}`{placed[s.name]}` as {s.data_type})"
            if placed.get(s.name) in had
            else f"cast(null as {s.data_type})",
        )
        for s in slot_map.slots
    ]


def _images_on_slots(spark: Any, source: str, member: str, slot_map: SlotMap) -> str | None:
    """A select of a member's own changelog as the group's: its images on the slots.

    The inverse of the member's view (the ``member_images`` macro). None when there is no
    ``source``.
    """
    if not spark.catalog.tableExists(source):
        return None
    image_type = spark.table(source).schema["before_image"].dataType
    had = {f.name for f in image_type.fields}

    def on_slots(image: str) -> str:
        fields = ", ".join(
            f"'{slot}', {value}" for slot, value in _slot_values(slot_map, member, had, image)
        )
        return f"if({image} is null, null, named_struct({fields})) as {image}"

    renamed = " ".join(f"when '{p.column}' then '{p.slot.name}'" for p in slot_map.of(member))
    return (
        f"select '{member}' as {MEMBER_COLUMN}, keyhash, operation, "
        f"{on_slots('before_image')}, {on_slots('after_image')}, "
        f"transform(changed_columns, changed -> case changed {renamed} end) as changed_columns, "
        f"business_date from {source}"
    )


def _keeping_changelog(group: Group) -> set[str]:
    """The members whose config keeps a changelog (``changelog: true``)."""
    return {m.name for m in group.members if m.changelog}


def _copy_dated(
    spark: Any, table: str, selects: dict[str, str | None], properties: dict[str, str]
) -> None:
    """Every date's rows of the members' own dated tables (``selects``) into the group's.

    The members' rows the table may hold already (a join killed before its end) are
    replaced.
    """
    found = {member: select for member, select in selects.items() if select is not None}
    if not found:
        return
    select = " union all ".join(found.values())
    spark.sql(f"reset {COMMIT_METADATA_SETTING}")
    if spark.catalog.tableExists(table):
        members = ", ".join(f"'{m}'" for m in sorted(found))
        spark.sql(
            f"insert into {table} replace where {MEMBER_COLUMN} in ({members}) "
            f"{_in_order_of(spark, table, select)}"
        )
        return
    listed = _listed(properties)
    spark.sql(
        f"create table {table} using delta partitioned by (business_date)"
        f"{f' tblproperties ({listed})' if listed else ''} as {select}"
    )


def _keeping_sensitive(spark: Any, group: Group, own: dict[str, Relations]) -> list[str]:
    """The joining members whose config has sensitive columns and who have their own tables."""
    configs = {m.name: m for m in group.members}
    return [
        member
        for member, tables in own.items()
        if configs[member].sensitive_columns and is_delta(spark, tables.sensitive_state)
    ]


def _join_tables(
    spark: Any,
    group: Group,
    tables: tuple[str, str],
    own: dict[str, tuple[str, str]],
    slot_map: SlotMap,
) -> dict[str, list[DateVersion]]:
    """The members' own state and history (``own``) taken into the group's (``tables``).

    The history's every date, then a commit of the group's state per date the member's
    state holds after the group's latest of it; the state records the members' slots
    (``slot_map``'s) and added columns last. Returns each member's dates the group's
    state holds now.
    """
    state, history = tables
    exists = spark.catalog.tableExists(state)
    held = member_applied_versions(spark, state, list(own)) if exists else {m: [] for m in own}
    dates: dict[str, list[DateVersion]] = {}
    for member, (own_state, _) in own.items():
        before = held[member][-1].business_date if held[member] else ""
        dates[member] = [d for d in applied_versions(spark, own_state) if d.business_date > before]
    if exists:
        add_slots(spark, [state, history], slot_map)
    _copy_dated(
        spark,
        history,
        {m: _on_slots(spark, h, m, slot_map, HISTORY_OWN_COLUMNS) for m, (_, h) in own.items()},
        history_properties(),
    )
    states = {m: own_state for m, (own_state, _) in own.items()}
    added = _added(spark, states)
    if exists:
        _apply_dates(spark, state, states, dates, slot_map, None)
        # The others' entries stay as recorded: their changes are the stage's to record.
        recorded = recorded_slots(table_properties(spark, state))
        slots = slots_property(recorded, slot_map, set(own))
        listed = _listed({SLOTS_PROPERTY: slots} | added)
        spark.sql(f"alter table {state} set tblproperties ({listed})")
    else:
        # A new group's state is written beside its name and renamed into place.
        written = state + REWRITE_SUFFIX
        spark.sql(f"drop table if exists {written}")
        properties = (
            group_state_properties(
                HASH_ALGORITHM_VERSION, group.extract_type, slot_map.as_property()
            )
            | added
        )
        if _apply_dates(spark, written, states, dates, slot_map, _listed(properties)):
            spark.sql(f"alter table {written} rename to {state}")
    return {member: [*held[member], *dates[member]] for member in own}


def _apply_dates(
    spark: Any,
    state: str,
    own: dict[str, str],
    dates: dict[str, list[DateVersion]],
    slot_map: SlotMap,
    create: str | None,
) -> bool:
    """A commit of ``state`` per date, in date order, applying it to the members that hold it.

    Each member's rows as its own state (``own``: member -> its state) held them at that
    date, on the slots.
    ``create``: ``state`` is made by the first commit, with these properties. Returns
    whether there was a date.
    """
    by_date: dict[str, dict[str, int]] = {}
    for member, applied in dates.items():
        for date in applied:
            by_date.setdefault(date.business_date, {})[member] = date.last_version
    for number, (date, versions) in enumerate(sorted(by_date.items())):
        select = " union all ".join(
            _on_slots(spark, own[m], m, slot_map, STATE_OWN_COLUMNS, v) or ""
            for m, v in sorted(versions.items())
        )
        spark.sql(f"set {COMMIT_METADATA_SETTING} = {commit_metadata(date, members=versions)}")
        try:
            if number == 0 and create is not None:
                spark.sql(f"create table {state} using delta tblproperties ({create}) as {select}")
            else:
                members = ", ".join(f"'{m}'" for m in sorted(versions))
                spark.sql(
                    f"insert into {state} replace where {MEMBER_COLUMN} in ({members}) "
                    f"{_in_order_of(spark, state, select)}"
                )
        finally:
            spark.sql(f"reset {COMMIT_METADATA_SETTING}")
    return bool(by_date)


def _listed(properties: dict[str, str]) -> str:
    """Table properties as ``tblproperties`` lists them: ``'key' = 'value', …``."""
    return ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())


def _in_order_of(spark: Any, table: str, select: str) -> str:
    """``select`` with its columns in ``table``'s order (an insert matches by position).

    A slot added to a group's table goes last, after hashcdc's columns.
    """
    columns = ", ".join(f"`{f.name}`" for f in spark.table(table).schema.fields)
    return f"select {columns} from ({select}) as joined"


def _added(spark: Any, states: dict[str, str]) -> dict[str, str]:
    """The first dates of the columns added to each member, as the group's state records them.

    ``states``: each member's own state.
    """
    return {
        f"{ADDED_PROPERTY_PREFIX}{member}.{key.removeprefix(ADDED_PROPERTY_PREFIX)}": value
        for member, state in states.items()
        for key, value in table_properties(spark, state).items()
        if key.startswith(ADDED_PROPERTY_PREFIX)
    }


def _drop_own(
    spark: Any,
    own: dict[str, Relations],
    views: bool,
    changelogs: set[str],
    sensitive: list[str],
) -> None:
    """The members' own tables, now the group's, and with ``views`` their own views.

    ``changelogs``, ``sensitive``: the members whose own changelog, and whose own
    sensitive tables, the group's took (one the config no longer keeps stays as it is).

    A date's run leaves the views to its dbt invocation, which replaces them with the
    member's (it listed them before the stage ran: a view dropped under it is not found).
    """
    for tables in own.values():
        keeps_sensitive = tables.table in sensitive
        for view in (tables.current, tables.scd2) if views else ():
            spark.sql(f"drop view if exists {view}")
        if views and keeps_sensitive:
            spark.sql(f"drop view if exists {tables.sensitive_current}")
        if keeps_sensitive:
            spark.sql(f"drop table if exists {tables.sensitive_history}")
            spark.sql(f"drop table if exists {tables.sensitive_state}")
        for table in (tables.history, tables.rejects, tables.state):
            spark.sql(f"drop table if exists {table}")
        if tables.table in changelogs:
            spark.sql(f"drop table if exists {tables.changelog}")
