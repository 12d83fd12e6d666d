"""PostgreSQL's ``pgoutput`` logical replication messages (protocol version 1), decoded.

The server sends one message per replication data frame: a transaction's ``Begin``, a
``Relation`` (a table's columns, sent before its first change in a session and again after
its shape changes), ``Insert``/``Update``/``Delete``/``Truncate`` rows as text, and
``Commit``. The byte layouts are those of PostgreSQL's "Logical Replication Message
Formats"; values stay PostgreSQL's text output (``t``/``f``, ``2024-03-01``, ``12.50``),
turned into JSON values by :mod:`hashcdc.capture.postgres`.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass, field

# PostgreSQL's epoch for timestamps on the wire: microseconds since 2000-01-01 UTC.
POSTGRES_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
# A value the update did not change and the server did not send (an unchanged TOASTed
# column): Debezium's placeholder, which the change-feed stage fills from the row before.
UNCHANGED_TOAST = object()


@dataclass(frozen=True)
class Column:
    """A column of a relation as the ``Relation`` message describes it."""

    name: str
    type_oid: int
    is_key: bool
    type_modifier: int = -1  # the type's length, precision and scale, as the catalog keeps them


@dataclass
class Relation:
    """A replicated table: its id, schema, name, replica identity and columns."""

    relation_id: int
    namespace: str
    name: str
    replica_identity: str
    columns: list[Column] = field(default_factory=list)

    @property
    def qualified_name(self) -> str:
        """``schema.table``, as the table's config names it."""
        return f"{self.namespace}.{self.name}"


@dataclass(frozen=True)
class Begin:
    """A transaction's start: its commit record's position, commit time and id."""

    final_lsn: int
    commit_time: dt.datetime
    xid: int


@dataclass(frozen=True)
class Commit:
    """A transaction's end: its commit record's position and the position after it."""

    commit_lsn: int
    end_lsn: int
    commit_time: dt.datetime


@dataclass(frozen=True)
class RowChange:
    """An insert (``c``), update (``u``) or delete (``d``) of one row.

    ``old`` is the row's identity before an update or delete (its key columns, or every
    column under ``REPLICA IDENTITY FULL``) when the server sends it; ``new`` the row after
    an insert or update. Values are text, ``None`` for SQL null, :data:`UNCHANGED_TOAST`
    for a value the server did not send.
    """

    relation_id: int
    op: str
    old: tuple[object, ...] | None
    new: tuple[object, ...] | None


@dataclass(frozen=True)
class Truncate:
    """``TRUNCATE`` of one or more relations."""

    relation_ids: tuple[int, ...]


@dataclass(frozen=True)
class Ignored:
    """A message capture has no use for (origin, type, logical message)."""

    kind: str


Message = Begin | Commit | Relation | RowChange | Truncate | Ignored


class _Cursor:
    """Reads big-endian fields from a message, front to back."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.offset)
        self.offset += struct.calcsize(fmt)
        return int(value)

    def byte(self) -> str:
        value = chr(self.data[self.offset])
        self.offset += 1
        return value

    def text(self) -> str:
        end = self.data.index(b"\x00", self.offset)
        value = self.data[self.offset : end].decode("utf-8")
        self.offset = end + 1
        return value

    def time(self) -> dt.datetime:
        return POSTGRES_EPOCH + dt.timedelta(microseconds=self.take(">q"))

    def tuple_data(self) -> tuple[object, ...]:
        values: list[object] = []
        for _ in range(self.take(">h")):
            kind = self.byte()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED_TOAST)
            elif kind == "t":
                length = self.take(">i")
                values.append(self.data[self.offset : self.offset + length].decode("utf-8"))
                self.offset += length
            else:
                raise ValueError(f"pgoutput: tuple value of kind {kind!r} (binary is not asked)")
        return tuple(values)


def decode(payload: bytes) -> Message:
    """One pgoutput message.

    Raises
    ------
    ValueError
        For a message this decoder does not know (the stream cannot be read on safely).

    """
    cursor = _Cursor(payload)
    kind = cursor.byte()
    if kind == "B":
        return Begin(cursor.take(">Q"), cursor.time(), cursor.take(">I"))
    if kind == "C":
        cursor.take(">b")  # flags: unused
        return Commit(cursor.take(">Q"), cursor.take(">Q"), cursor.time())
    if kind == "R":
        relation = Relation(cursor.take(">I"), cursor.text(), cursor.text(), cursor.byte())
        for _ in range(cursor.take(">h")):
            flags = cursor.take(">b")
            name = cursor.text()
            type_oid = cursor.take(">I")
            relation.columns.append(Column(name, type_oid, bool(flags & 1), cursor.take(">i")))
        return relation
    if kind == "I":
        relation_id = cursor.take(">I")
        cursor.byte()  # 'N'
        return RowChange(relation_id, "c", None, cursor.tuple_data())
    if kind == "U":
        relation_id = cursor.take(">I")
        marker = cursor.byte()
        old = None
        if marker in "KO":
            old = cursor.tuple_data()
            marker = cursor.byte()
        return RowChange(relation_id, "u", old, cursor.tuple_data())
    if kind == "D":
        relation_id = cursor.take(">I")
        cursor.byte()  # 'K' (key columns) or 'O' (the whole old row)
        return RowChange(relation_id, "d", cursor.tuple_data(), None)
    if kind == "T":
        count = cursor.take(">I")
        cursor.take(">b")  # options: CASCADE, RESTART IDENTITY
        return Truncate(tuple(cursor.take(">I") for _ in range(count)))
    if kind in "OYM":
        return Ignored(kind)
    raise ValueError(f"pgoutput: unknown message kind {kind!r}")


def lsn_text(lsn: int) -> str:
    """A position as PostgreSQL writes it: ``16/B374D848``."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def lsn_number(text: str) -> int:
    """A position written ``16/B374D848`` as a number."""
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)
