"""A table group's tables follow its members' configs: a column added to one member.

A column appended to a member's config (no ``added:``; a group's member has no shape
settings) takes a slot of its family (:mod:`hashcdc.groups.slots`). Before the group's
stage reads anything, :func:`evolve_group` compares the members' columns with the slot
map the group's state records (``hashcdc.slots``): a member's column the map lacks was
added on this date, as a table's own (:func:`hashcdc.pipeline.evolution.tables.infer_additions`),
and the date is recorded on the state (``hashcdc.added.<member>.<column>``) with the new
map, before the slots the state and history lack are added (``ALTER TABLE ... ADD
COLUMNS``: metadata only, older files read them as null). A member's recorded first
dates are then its columns' ``added``, so its stage reads an earlier date's extract
without them, and the diff takes a row whose hash differs only by the added column for
no update (``cdc_state``'s members' shape changes, ``_member_shape_changes``).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from hashcdc.config import ColumnConfig
from hashcdc.groups import outcomes
from hashcdc.groups.members import Group
from hashcdc.groups.slots import Placement, SlotMap
from hashcdc.state.versions import (
    ADDED_PROPERTY_PREFIX,
    SLOTS_PROPERTY,
    member_applied_versions,
    table_properties,
)


def recorded_slots(properties: dict[str, str]) -> dict[str, dict[str, str]]:
    """The slot map a group's state records: member -> column -> slot."""
    recorded: dict[str, dict[str, str]] = {}
    for entry in properties.get(SLOTS_PROPERTY, "").split(";"):
        if ":" in entry and "=" in entry:
            member, placed = entry.split(":", 1)
            column, slot = placed.split("=", 1)
            recorded.setdefault(member, {})[column] = slot
    return recorded


def moved_columns(
    recorded: dict[str, dict[str, str]],
    slot_map: SlotMap,
    member: str,
    renamed: dict[str, tuple[str, ...]] | None = None,
) -> list[Placement]:
    """A member's columns whose slot in ``slot_map`` is not the one the state records.

    ``renamed``: a column's earlier names (``renamed_from``), under which the state may
    record it.
    """
    known = recorded.get(member, {})
    moved = []
    for placement in slot_map.of(member):
        names = (placement.column, *(renamed or {}).get(placement.column, ()))
        slot = next((known[name] for name in names if name in known), placement.slot.name)
        if slot != placement.slot.name:
            moved.append(placement)
    return moved


def _is_recorded(column: ColumnConfig, known: dict[str, str]) -> bool:
    """Whether the state records the column, under its name or an earlier one."""
    return any(name in known for name in (column.name, *column.renamed_from))


def evolve_group(spark: Any, schema: str, group: Group, business_date: str) -> Group:
    """The group with its members' added columns dated, its tables brought to its slots.

    A member whose column cannot be dated (the date is not after the member's latest), or
    whose column would move to another slot (a decimal's scale), is refused for the date
    with what to do (:mod:`hashcdc.groups.outcomes`); its siblings run. A column renamed
    (``renamed_from``) keeps its slot; a column added with ``added:`` takes its date from
    the config. The state records the members' slots as they are now (``hashcdc.slots``:
    a refused member's as they were). The members' sensitive columns are the group's
    sensitive state's and history's to record and hold, on their own slots.
    """
    relations = group.relations.in_schema(schema)
    refused: set[str] = set()
    added = _evolve_tables(
        spark, group, business_date, (relations.state, relations.history), group.slot_map, refused
    )
    if group.sensitive_members:
        tables = (relations.sensitive_state, relations.sensitive_history)
        slot_map = group.sensitive_slot_map
        added |= _evolve_tables(spark, group, business_date, tables, slot_map, refused)
    return _dated(group, added)


def _evolve_tables(
    spark: Any,
    group: Group,
    business_date: str,
    tables: tuple[str, str],
    slot_map: SlotMap,
    refused: set[str],
) -> dict[str, str]:
    """:func:`evolve_group` for one state and its history, holding ``slot_map``'s columns.

    ``refused``: the members refused for the date, which this adds to (and skips). Returns
    the first dates the state records: ``member.column`` -> date.
    """
    state, history = tables
    if not spark.catalog.tableExists(state):
        return {}
    properties = table_properties(spark, state)
    recorded = recorded_slots(properties)
    placed = {m: {p.column for p in slot_map.of(m)} for m in slot_map.members}
    added = {
        key.removeprefix(ADDED_PROPERTY_PREFIX): value
        for key, value in properties.items()
        if key.startswith(ADDED_PROPERTY_PREFIX)
    }
    new: dict[str, list[ColumnConfig]] = {}
    for member in group.enabled_members:
        if member.name not in recorded or member.name in refused:
            continue  # new to the group: its first date adds its columns
        columns = [c for c in member.columns if c.name in placed[member.name]]
        renamed = {c.name: c.renamed_from for c in columns if c.renamed_from}
        held = [c.name for c in member.sensitive_columns if c.name in recorded[member.name]]
        if held and not slot_map.holds_sensitive():
            reason = _now_sensitive(group, member, held, tables)
            outcomes.refuse(group.name, business_date, member.name, reason)
            refused.add(member.name)
            continue
        moved = moved_columns(recorded, slot_map, member.name, renamed)
        if moved:
            outcomes.refuse(group.name, business_date, member.name, _moved(group, member, moved))
            refused.add(member.name)
            continue
        fresh = [c for c in columns if not _is_recorded(c, recorded[member.name])]
        if fresh:
            new[member.name] = fresh
    undated = {m: [c for c in columns if c.added is None] for m, columns in new.items()}
    applied = member_applied_versions(spark, state, [m for m, c in undated.items() if c])
    inferred: dict[str, list[str]] = {}
    for member, columns in undated.items():
        if not columns:
            continue
        latest = applied[member][-1].business_date if applied[member] else None
        if latest is not None and business_date <= latest:
            outcomes.refuse(
                group.name,
                business_date,
                member,
                _undated(group, member, columns, business_date, latest),
            )
            refused.add(member)
            continue
        inferred[member] = [c.name for c in columns]
        added.update({f"{member}.{c.name}": business_date for c in columns})
    now = slots_property(recorded, slot_map, set(slot_map.members) - refused)
    if inferred or now != properties.get(SLOTS_PROPERTY):
        listed = "".join(
            f", '{ADDED_PROPERTY_PREFIX}{m}.{c}' = '{business_date}'"
            for m, names in inferred.items()
            for c in names
        )
        # Recorded before the slots are added: a run killed in between knows them next time.
        slots = f"'{SLOTS_PROPERTY}' = '{now}'"
        spark.sql(f"alter table {state} set tblproperties ({slots}{listed})")
        for member, names in inferred.items():
            print(
                f"hashcdc: table '{member}' (group '{group.name}'): column(s) "
                f"{', '.join(repr(n) for n in names)} first appear in the extract of "
                f"{business_date}: taken as added on that date (earlier rows are not updates "
                "because of them).",
                file=sys.stdout,
                flush=True,
            )
    add_slots(spark, [state, history], slot_map)
    return added


def add_slots(spark: Any, tables: list[str], slot_map: SlotMap) -> None:
    """The slots the group's tables lack, added (``ALTER TABLE ADD COLUMNS``: no rewrite)."""
    for table in tables:
        if not spark.catalog.tableExists(table):
            continue
        existing = {f.name for f in spark.table(table).schema.fields}
        lacking = [s for s in slot_map.slots if s.name not in existing]
        if lacking:
            columns = ", ".join(f"`{s.name}` {s.data_type}" for s in lacking)
            spark.sql(f"alter table {table} add columns ({columns})")


def slots_property(
    recorded: dict[str, dict[str, str]], slot_map: SlotMap, members: set[str]
) -> str:
    """The slot map a group's state records (``hashcdc.slots``), members in name order.

    ``members`` take their placements in ``slot_map`` now; every other member keeps the
    entries the state records (a refused member, one not yet joined, one left the group).
    """
    entries = []
    for member in sorted(set(slot_map.members) | set(recorded)):
        if member in members and member in slot_map.members:
            entries += [f"{member}:{p.column}={p.slot.name}" for p in slot_map.of(member)]
        else:
            entries += [f"{member}:{c}={slot}" for c, slot in recorded.get(member, {}).items()]
    return ";".join(entries)


def _dated(group: Group, added: dict[str, str]) -> Group:
    """The group with each member's recorded first dates as its columns' ``added``."""
    members = []
    for member in group.members:
        columns = tuple(
            dataclasses.replace(c, added=added[f"{member.name}.{c.name}"])
            if c.added is None and f"{member.name}.{c.name}" in added
            else c
            for c in member.columns
        )
        members.append(dataclasses.replace(member, columns=columns))
    return Group(group.name, tuple(members))


def _moved(group: Group, member: Any, moved: list[Any]) -> str:
    listed = ", ".join(f"{p.column} ({p.data_type})" for p in moved)
    return (
        f"table '{member.name}': column(s) {listed} of {member.config_file} no longer sit on "
        f"the slots group '{group.name}''s state records for them: a type changed to "
        "another kind of slot (a decimal's scale, another family of types), or a column of "
        "the same kind before them was taken out of the config. A group does not move a "
        "column's values yet; nothing of the table was written. Put the config back, or "
        "run the table on its own (no `group:`), where such a change is a widening or a "
        "removal (docs/schema-evolution.md)."
    )


def _now_sensitive(group: Group, member: Any, held: list[str], tables: tuple[str, str]) -> str:
    return (
        f"table '{member.name}': column(s) {', '.join(held)} of {member.config_file} are now "
        f"marked sensitive, and group '{group.name}''s main tables ({', '.join(tables)}) hold "
        "their values: sensitive values are never kept in the main tables; nothing of the "
        "table was written. Keep the column(s) non-sensitive, or run the table on its own "
        "(no `group:`) after its group's rows of it are gone."
    )


def _undated(group: Group, member: str, columns: list[Any], business_date: str, latest: str) -> str:
    config = next(m.config_file for m in group.members if m.name == member)
    return (
        f"table '{member}': column(s) {', '.join(c.name for c in columns)} of {config} are "
        f"not in its group '{group.name}''s tables yet, and {business_date} is not after its "
        f"latest processed date {latest}, so the date the source began to send them cannot "
        "be inferred; nothing of it was written. Run them from a date after "
        f"{latest}, or run the table on its own (no `group:`) to say `added:` in its lines."
    )


def member_shape_changes(
    properties: dict[str, str],
    members: list[str],
    declared: dict[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The shape changes of a group's members, as ``only_shape_differs`` takes a table's.

    Member -> ``{'compared': its compared slots, 'changed': {slot: change}}``: the changes
    its config ``declared`` (the generator's ``member_shapes``, which also name its
    compared slots when some of its columns are not compared), with the columns the state
    records as added to it (``hashcdc.added.<member>.<column>``; a date the config gives
    wins). Members without a change are left out.
    """
    declared = declared or {}
    slots = recorded_slots(properties)
    changes: dict[str, dict[str, Any]] = {
        member: {"compared": list(shape["compared"]), "changed": dict(shape["changed"])}
        for member, shape in declared.items()
        if member in members and shape.get("changed")
    }
    for key, value in sorted(properties.items()):
        if not key.startswith(ADDED_PROPERTY_PREFIX):
            continue
        member, _, column = key.removeprefix(ADDED_PROPERTY_PREFIX).partition(".")
        if member not in members or column not in slots.get(member, {}):
            continue
        compared = declared.get(member, {}).get("compared", list(slots[member].values()))
        slot = slots[member][column]
        if slot not in compared:
            continue  # not compared (ignored): no shape change of the row's hash
        change = changes.setdefault(member, {"compared": list(compared), "changed": {}})
        change["changed"].setdefault(slot, {}).setdefault("added", value)
    return changes
