"""The groups of a project: which tables run together, and the group's slot map."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from hashcdc.config import TableConfig
from hashcdc.groups.slots import SENSITIVE_SLOTS, SlotMap, place
from hashcdc.relations import Relations


@dataclass(frozen=True)
class Group:
    """A table group: its name and its member tables, in name order."""

    name: str
    members: tuple[TableConfig, ...]

    @property
    def relations(self) -> Relations:
        """The group's own relations: ``stg_<group>``, ``<group>_state``, its history."""
        return Relations(self.name)

    @cached_property
    def slot_map(self) -> SlotMap:
        """Where each member's columns sit on the group's slots.

        Placed once per group: the generator and the stage ask it once per member.
        """
        return place((m.name, [(c.name, c.type) for c in m.main_columns]) for m in self.members)

    @cached_property
    def sensitive_slot_map(self) -> SlotMap:
        """Where each member's sensitive columns sit on the slots of ``<group>_sensitive_state``.

        Their own slots (``sensitive_<type>_<n>``), apart from the others': no value of
        theirs is stored in the group's main tables.
        """
        return place(
            ((m.name, [(c.name, c.type) for c in m.sensitive_columns]) for m in self.members),
            SENSITIVE_SLOTS,
        )

    @cached_property
    def stage_slot_map(self) -> SlotMap:
        """The slots of the group's stage: the main tables' and then the sensitive ones."""
        return self.slot_map.joined(self.sensitive_slot_map)

    @property
    def sensitive_members(self) -> tuple[TableConfig, ...]:
        """The members with sensitive columns (kept in the group's sensitive tables)."""
        return tuple(m for m in self.members if m.sensitive_columns)

    @property
    def extract_type(self) -> str:
        """The members' extract type, which they share (``full``, ``delta`` or ``changes``)."""
        return self.members[0].extract_type if self.members else "full"

    @property
    def is_feed(self) -> bool:
        """Whether the members are change feeds (they share their events' order)."""
        return self.extract_type == "changes"

    @property
    def enabled_members(self) -> tuple[TableConfig, ...]:
        """The members a run processes (a paused member keeps its rows as they are)."""
        return tuple(m for m in self.members if m.enabled)

    def to_dict(self) -> dict[str, Any]:
        """The plain-data form the generator embeds in the group's stage model."""
        return {"group": self.name, "members": [m.to_dict() for m in self.members]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Group:
        """Rebuild a group from :meth:`to_dict` output."""
        members = tuple(TableConfig.from_dict(m) for m in data["members"])
        return cls(data["group"], members)


def is_group_data(data: dict[str, Any] | None) -> bool:
    """Whether a stage model's embedded config is a group's (else a table's)."""
    return bool(data) and "members" in data


def groups_of(tables: Iterable[TableConfig]) -> dict[str, Group]:
    """The project's groups by name, from the tables' ``group:`` settings."""
    by_group: dict[str, list[TableConfig]] = {}
    for table in tables:
        if table.group is not None:
            by_group.setdefault(table.group, []).append(table)
    return {
        name: Group(name, tuple(sorted(members, key=lambda t: t.name)))
        for name, members in sorted(by_group.items())
    }


def stages_of(tables: Iterable[TableConfig]) -> dict[str, str]:
    """The stage model of each table that runs in its group's: member → ``stg_<group>``."""
    return {t.name: Relations(t.group).stage for t in tables if t.group is not None}
