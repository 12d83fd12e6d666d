"""The typed slots of a group's state, and where each member's columns sit on them.

A member's column takes the next slot of its type's *slot type* (integers: ``bigint``;
floating point: ``double``; ``decimal(p,s)``: ``decimal(38,s)``; text, boolean, date and
timestamp: themselves), in the order of the member's config. Values are widened into the
slot without loss and cast back by the member's views. The row of a group is as wide as
its widest member, not the sum of its members.

The map is a function of each member's columns in config order, so a column appended to
a member takes a slot after its others and no column of any member moves. It imports
neither Spark nor the config: the generator, the stage and the readers' docs share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hashcdc.column_types import Family, column_type, decimal_scale, normalize_type

# The column that names a row's member (re-exported: the groups' modules name it here).
from hashcdc.relations import MEMBER_COLUMN as MEMBER_COLUMN

# Before the names of the slots of the members' sensitive columns (``sensitive_string_1``):
# in the group's stage beside the others, stored only in ``<group>_sensitive_state``.
SENSITIVE_SLOTS = "sensitive_"

_SLOT_TYPES = {
    Family.TEXT: "string",
    Family.INTEGER: "bigint",
    Family.FLOATING: "double",
    Family.BOOLEAN: "boolean",
    Family.DATE: "date",
    Family.TIMESTAMP: "timestamp",
}


def slot_type(data_type: str) -> str:
    """The type of the slots a column of ``data_type`` is stored on."""
    name = normalize_type(data_type)
    if name is None:
        raise ValueError(f"{data_type!r} is not a column type hashcdc knows")
    family = column_type("decimal" if name.startswith("decimal(") else name).family
    if family is Family.DECIMAL:
        return f"decimal(38,{decimal_scale(name)})"
    return _SLOT_TYPES[family]


def _slot_prefix(slot_data_type: str) -> str:
    """``decimal(38,2)`` → ``decimal_s2``; the other slot types are names already."""
    if slot_data_type.startswith("decimal("):
        return f"decimal_s{decimal_scale(slot_data_type)}"
    return slot_data_type


@dataclass(frozen=True)
class Slot:
    """One column of a group's state that members' columns are stored on."""

    name: str
    data_type: str


@dataclass(frozen=True)
class Placement:
    """A member's column on its slot: the column's name and type, and the slot."""

    column: str
    data_type: str
    slot: Slot


@dataclass(frozen=True)
class SlotMap:
    """The group's slots, in a stable order, and each member's placements."""

    slots: tuple[Slot, ...]
    members: dict[str, tuple[Placement, ...]]

    def of(self, member: str) -> tuple[Placement, ...]:
        """A member's placements, in its config's column order."""
        return self.members[member]

    def slot_names(self) -> list[str]:
        """The slot columns, in the state's order."""
        return [slot.name for slot in self.slots]

    def holds_sensitive(self, member: str | None = None) -> bool:
        """Whether a slot (of ``member``'s placements) is a sensitive column's."""
        slots = self.slots if member is None else [p.slot for p in self.of(member)]
        return any(slot.name.startswith(SENSITIVE_SLOTS) for slot in slots)

    def joined(self, other: SlotMap) -> SlotMap:
        """Both maps' slots and placements: this one's, then ``other``'s (their names differ)."""
        members = {
            member: (*self.members.get(member, ()), *other.members.get(member, ()))
            for member in {**self.members, **other.members}
        }
        return SlotMap((*self.slots, *other.slots), members)

    def as_property(self) -> str:
        """The map as readers without Spark find it (the state's ``hashcdc.slots``).

        ``member:column=slot;…``, members in name order, columns in config order.
        """
        return ";".join(
            f"{member}:{p.column}={p.slot.name}"
            for member in sorted(self.members)
            for p in self.members[member]
        )


def place(members: Iterable[tuple[str, Sequence[tuple[str, str]]]], prefix: str = "") -> SlotMap:
    """The slot map of a group from each member's (name, [(column, type), …]).

    ``prefix``: before every slot's name (:data:`SENSITIVE_SLOTS`: the sensitive columns'
    slots, beside the others' in the group's stage).

    Raises
    ------
    ValueError
        When a member is named twice.

    """
    placements: dict[str, tuple[Placement, ...]] = {}
    widest: dict[str, int] = {}
    types: dict[str, str] = {}
    for member, columns in members:
        if member in placements:
            raise ValueError(f"member {member!r} is named twice")
        used: dict[str, int] = {}
        placed = []
        for column, data_type in columns:
            kind = slot_type(data_type)
            kind_prefix = prefix + _slot_prefix(kind)
            used[kind_prefix] = used.get(kind_prefix, 0) + 1
            slot = Slot(f"{kind_prefix}_{used[kind_prefix]}", kind)
            placed.append(Placement(column, normalize_type(data_type) or data_type, slot))
            types[kind_prefix] = kind
        for kind_prefix, count in used.items():
            widest[kind_prefix] = max(widest.get(kind_prefix, 0), count)
        placements[member] = tuple(placed)
    slots = tuple(
        Slot(f"{kind_prefix}_{n}", types[kind_prefix])
        for kind_prefix in sorted(widest)
        for n in range(1, widest[kind_prefix] + 1)
    )
    return SlotMap(slots, placements)
