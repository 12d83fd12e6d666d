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
    recorded: dict[str, dict[str, str]], slot_map: SlotMap, member: str
) -> list[Placement]:
    """A member's columns whose slot in ``slot_map`` is not the one the state records."""
    return [
        p
        for p in slot_map.of(member)
        if recorded.get(member, {}).get(p.column, p.slot.name) != p.slot.name
    ]


def evolve_group(spark: Any, schema: str, group: Group, business_date: str) -> Group:
    """The group with its members' added columns dated, its tables brought to its slots.

    A member whose column cannot be dated (the date is not after the member's latest), or
    whose column's type moves it to another slot (a decimal's scale), is refused for the
    date with what to do (:mod:`hashcdc.groups.outcomes`); its siblings run.
    """
    relations = group.relations.in_schema(schema)
    if not spark.catalog.tableExists(relations.state):
        return group
    properties = table_properties(spark, relations.state)
    recorded = recorded_slots(properties)
    slot_map = group.slot_map
    added = {
        key.removeprefix(ADDED_PROPERTY_PREFIX): value
        for key, value in properties.items()
        if key.startswith(ADDED_PROPERTY_PREFIX)
    }
    new = {
        m.name: [c for c in m.main_columns if c.name not in recorded[m.name]]
        for m in group.enabled_members
        if m.name in recorded and any(c.name not in recorded[m.name] for c in m.main_columns)
    }
    for member in group.enabled_members:
        moved = moved_columns(recorded, slot_map, member.name)
        if moved:
            outcomes.refuse(group.name, business_date, member.name, _moved(group, member, moved))
            new.pop(member.name, None)
    applied = member_applied_versions(spark, relations.state, list(new))
    inferred: dict[str, list[str]] = {}
    for member, columns in new.items():
        latest = applied[member][-1].business_date if applied[member] else None
        if latest is not None and business_date <= latest:
            outcomes.refuse(
                group.name,
                business_date,
                member,
                _undated(group, member, columns, business_date, latest),
            )
            continue
        inferred[member] = [c.name for c in columns]
        added.update({f"{member}.{c.name}": business_date for c in columns})
    if inferred:
        listed = ", ".join(
            f"'{ADDED_PROPERTY_PREFIX}{m}.{c}' = '{business_date}'"
            for m, names in inferred.items()
            for c in names
        )
        # Recorded before the slots are added: a run killed in between knows them next time.
        spark.sql(
            f"alter table {relations.state} set tblproperties "
            f"('{SLOTS_PROPERTY}' = '{slot_map.as_property()}', {listed})"
        )
        for member, names in inferred.items():
            print(
                f"hashcdc: table '{member}' (group '{group.name}'): column(s) "
                f"{', '.join(repr(n) for n in names)} first appear in the extract of "
                f"{business_date}: taken as added on that date (earlier rows are not updates "
                "because of them).",
                file=sys.stdout,
                flush=True,
            )
    for table in (relations.state, relations.history):
        if not spark.catalog.tableExists(table):
            continue
        existing = {f.name for f in spark.table(table).schema.fields}
        lacking = [s for s in slot_map.slots if s.name not in existing]
        if lacking:
            columns = ", ".join(f"`{s.name}` {s.data_type}" for s in lacking)
            spark.sql(f"alter table {table} add columns ({columns})")
    return _dated(group, added)


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
    properties: dict[str, str], members: list[str]
) -> dict[str, dict[str, Any]]:
    """The shape changes of a group's members, as ``only_shape_differs`` takes a table's.

    Member -> ``{'compared': its slots, 'changed': {slot: {'added': date}}}``, for the
    members the state records a column added to (``hashcdc.added.<member>.<column>``).
    """
    slots = recorded_slots(properties)
    changes: dict[str, dict[str, Any]] = {}
    for key, value in sorted(properties.items()):
        if not key.startswith(ADDED_PROPERTY_PREFIX):
            continue
        member, _, column = key.removeprefix(ADDED_PROPERTY_PREFIX).partition(".")
        if member not in members or column not in slots.get(member, {}):
            continue
        change = changes.setdefault(
            member, {"compared": list(slots[member].values()), "changed": {}}
        )
        change["changed"][slots[member][column]] = {"added": value}
    return changes
