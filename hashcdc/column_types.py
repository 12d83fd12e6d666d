"""The column types a table config may give: one registry holding each type's every rule.

A type is registered once, in :data:`TYPES`, with its name and aliases, its family (which
says how extract text is cast to it — :mod:`hashcdc.pipeline.casting` — and how a cast value is
encoded for hashing — :mod:`hashcdc.pipeline.hashing`), the widenings it allows, whether a
connector's logical type may decode it in a change feed, and the lowest value a sequence
field of the type takes when an event lacks it. The config's validation, the casting, the
hashing, the schema evolution and the change-feed decoding all ask this module; the type's
line in ``tables.schema.json`` and the type table in ``docs/schema-evolution.md`` are
generated from it (:mod:`hashcdc.registries`: ``python -m hashcdc.registries`` rewrites
both; a unit test checks they match).

A type cannot exist without a hash encoding: ``family`` is a required field, and
:mod:`hashcdc.pipeline.hashing` refuses to import unless it encodes every :class:`Family`.

This module imports neither Spark nor the config, so the config's validation (and the
CLI's quick paths) stay light.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Family(enum.Enum):
    """How a type's values are read from text and encoded for hashing."""

    TEXT = "text"
    INTEGER = "integer"
    FLOATING = "floating point"
    DECIMAL = "decimal"
    BOOLEAN = "boolean"
    DATE = "date"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True)
class ColumnType:
    """One configurable column type.

    Attributes
    ----------
    name : str
        The canonical spelling (Spark's); ``decimal`` stands for ``decimal(p,s)``.
    family : Family
        Decides the cast from text and the hash encoding.
    hash_form : str
        The canonical value hashed, in words (the docs' table).
    aliases : tuple of str
        Other spellings a config may use.
    width : int
        For integers and floating-point types: the bytes of a value. A type widens to a
        wider type of its family.
    widens_to : tuple of str
        Widenings to another family (``date`` to ``timestamp``).
    connector_decoded : bool
        A connector's logical type (Debezium's schema) may say how the value is encoded
        in a change event (epoch numbers, binary decimals).
    lowest : int or str or None
        The value a sequence field of this type takes when an event lacks it
        (``missing: lowest``); None: not allowed as such a field.
    database_names : tuple of str
        How PostgreSQL and MariaDB/MySQL catalogs name the type (without its length or
        precision): a captured table's schema-change event is read through them.

    """

    name: str
    family: Family
    hash_form: str
    aliases: tuple[str, ...] = ()
    width: int = 0
    widens_to: tuple[str, ...] = ()
    connector_decoded: bool = False
    lowest: int | str | None = None
    database_names: tuple[str, ...] = ()

    @property
    def spelling(self) -> str:
        """The type as a config writes it."""
        return "decimal(p,s)" if self.family is Family.DECIMAL else self.name


_INTEGER_FORM = "the plain decimal text of the number (`3`), as exact numbers share it"
TYPES: tuple[ColumnType, ...] = (
    ColumnType(
        "string",
        Family.TEXT,
        "its UTF-8 bytes",
        aliases=("str", "varchar", "text"),
        connector_decoded=True,
        lowest="",
        database_names=(
            "text",
            "character varying",
            "varchar",
            "character",
            "char",
            "bpchar",
            "name",
            "citext",
            "uuid",
            "json",
            "jsonb",
            "xml",
            "tinytext",
            "mediumtext",
            "longtext",
            "enum",
            "set",
            "time",
            "time without time zone",
            "time with time zone",
            "interval",
        ),  # fmt: skip
    ),
    ColumnType(
        "tinyint",
        Family.INTEGER,
        _INTEGER_FORM,
        ("byte",),
        width=1,
        lowest=-(2**7),
        database_names=("tinyint",),
    ),
    ColumnType(
        "smallint",
        Family.INTEGER,
        _INTEGER_FORM,
        ("short",),
        width=2,
        lowest=-(2**15),
        database_names=("smallint", "int2", "year"),
    ),
    ColumnType(
        "int",
        Family.INTEGER,
        _INTEGER_FORM,
        ("integer",),
        width=4,
        lowest=-(2**31),
        database_names=("integer", "int", "int4", "mediumint"),
    ),
    ColumnType(
        "bigint",
        Family.INTEGER,
        _INTEGER_FORM,
        ("long",),
        width=8,
        lowest=-(2**63),
        database_names=("bigint", "int8", "oid"),
    ),
    ColumnType(
        "float",
        Family.FLOATING,
        "the 64 bits of the value as a double",
        ("real",),
        width=4,
        database_names=("real", "float4", "float"),
    ),
    ColumnType(
        "double",
        Family.FLOATING,
        "its 64 bits (`-0.0` as `0.0`, one NaN)",
        (),
        width=8,
        database_names=("double precision", "float8", "double"),
    ),
    ColumnType(
        "decimal",
        Family.DECIMAL,
        "plain decimal text without trailing zeros (`1.50` as `1.5`)",
        connector_decoded=True,
        database_names=("numeric", "decimal"),
    ),
    ColumnType("boolean", Family.BOOLEAN, "1 or 0", ("bool",), database_names=("boolean", "bool")),
    ColumnType(
        "date",
        Family.DATE,
        "days since 1970-01-01",
        widens_to=("timestamp",),
        connector_decoded=True,
        database_names=("date",),
    ),
    ColumnType(
        "timestamp",
        Family.TIMESTAMP,
        "microseconds since the epoch, UTC",
        connector_decoded=True,
        database_names=(
            "timestamp without time zone",
            "timestamp with time zone",
            "timestamp",
            "datetime",
            "timestamptz",
        ),  # fmt: skip
    ),
)
# A database's type as its catalog writes it: the name, its (precision, scale), the rest.
_DATABASE_TYPE = re.compile(
    r"^\s*([a-z][a-z0-9 ]*[a-z0-9]|[a-z])\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(.*)$"
)
DECIMAL_PATTERN = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
# The precision of a bare `decimal` (Spark's default).
DEFAULT_DECIMAL = "decimal(10,0)"
# A decimal widens by its digits, not by its name.
DECIMAL_WIDENING = (
    "decimal(p,s) to a decimal with at least as many digits on both sides of the point"
)


class TypeRegistry:
    """The registered types and every rule derived from them."""

    def __init__(self, types: tuple[ColumnType, ...]) -> None:
        self.types = types
        self._by_name = {t.name: t for t in types}
        self._aliases = {alias: t.name for t in types for alias in t.aliases}

    def normalize(self, raw: object) -> str | None:
        """The canonical name of a configured type; None when no registered type has it.

        Aliases give their type's name; ``decimal(p,s)`` keeps its numbers (checked).
        """
        if not isinstance(raw, str):
            return None
        text = raw.strip().lower()
        text = self._aliases.get(text, text)
        if text == "decimal":
            return DEFAULT_DECIMAL
        if text in self._by_name:
            return text
        match = DECIMAL_PATTERN.match(text)
        if match:
            precision, scale = int(match.group(1)), int(match.group(2))
            if 1 <= precision <= 38 and scale <= precision:
                return f"decimal({precision},{scale})"
        return None

    def from_database(self, type_text: str) -> str | None:
        """The canonical type of a database column (``numeric(12,2)``, ``varchar(20)``).

        None when no registered type holds it (arrays, geometry, ``bytea``, a ``numeric``
        without precision, which holds any number of digits).
        """
        match = _DATABASE_TYPE.match(type_text.lower())
        if match is None:
            return None
        name, precision, scale, rest = match.groups()
        for flag in (" zerofill", " unsigned"):  # MariaDB's flags after a bare name
            if name.endswith(flag):
                name, rest = name.removesuffix(flag), f"{flag.strip()} {rest}"
        if rest.strip() not in ("", "unsigned", "zerofill", "unsigned zerofill"):
            # timestamp(3) with time zone: the name goes on after the precision.
            name = f"{name} {rest.strip()}" if not rest.startswith("[") else "array"
        found = next((t for t in self.types if name in t.database_names), None)
        if found is None:
            return None
        if found.family is Family.DECIMAL:
            return self.normalize(f"decimal({precision},{scale or 0})") if precision else None
        if found.family is Family.INTEGER and "unsigned" in rest and found.width < 8:
            # An unsigned integer needs the next width up (MariaDB).
            wider = [t for t in self.types if _widens_within_family(found, t)]
            return min(wider, key=_width).name
        return found.name

    def get(self, name: str) -> ColumnType:
        """The registered type of a canonical type name (``decimal(12,2)`` included)."""
        if DECIMAL_PATTERN.match(name):
            name = "decimal"
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(f"unknown column type {name!r}") from None

    def names(self) -> str:
        """The configurable types, in a sentence's list (the config's messages)."""
        return ", ".join(t.spelling for t in self.types)

    def lowest_sequence_types(self) -> tuple[str, ...]:
        """The types a sequence field may have with ``missing: lowest``."""
        return tuple(t.name for t in self.types if t.lowest is not None)

    def wider(self, column: ColumnType) -> list[str]:
        """The types a column of this (non-decimal) type may widen to."""
        same_family = [t.name for t in self.types if _widens_within_family(column, t)]
        return same_family + list(column.widens_to)

    def change_problem(self, old: str, new: str) -> str | None:
        """Why a column's type cannot change from ``old`` to ``new``; None for a widening."""
        if old == new:
            return None
        old_type, new_type = self._by_name.get(old), self._by_name.get(new)
        if old_type and new_type and old_type.family is new_type.family and old_type.width:
            if _widens_within_family(old_type, new_type):
                return None
            return f"{old} to {new} narrows the column: values may no longer fit"
        if old_type and new in old_type.widens_to:
            return None
        old_decimal, new_decimal = DECIMAL_PATTERN.match(old), DECIMAL_PATTERN.match(new)
        if old_decimal and new_decimal:
            (p1, s1), (p2, s2) = (map(int, m.groups()) for m in (old_decimal, new_decimal))
            if s2 < s1:
                return f"{old} to {new} lowers the scale: digits after the point would be lost"
            if p2 - s2 < p1 - s1:
                return f"{old} to {new} has fewer digits before the point: values may not fit"
            return None
        return f"{old} to {new} is not a widening (widenings: {self.widenings_hint()})"

    def widenings_hint(self) -> str:
        """Every allowed widening in a sentence's list (a refused change's message)."""
        parts = []
        for family in Family:
            sized = sorted((t for t in self.types if t.family is family and t.width), key=_width)
            if len(sized) == 2:
                parts.append(f"{sized[0].name} to {sized[1].name}")
            elif len(sized) > 2:
                narrower = "/".join(t.name for t in sized[:-1])
                parts.append(f"{narrower} to a wider {family.value}")
            if family is Family.DECIMAL:
                parts.append(DECIMAL_WIDENING)
        parts += [f"{t.name} to {wider}" for t in self.types for wider in t.widens_to]
        return ", ".join(parts)

    def schema_description(self) -> str:
        """The description of a column's ``type`` in ``tables.schema.json``."""
        aliases = ", ".join(alias for t in self.types for alias in t.aliases)
        return f"{self.names()} (aliases: {aliases})."

    def markdown_table(self) -> str:
        """The docs' table of the column types (docs/schema-evolution.md)."""
        lines = [
            "| type | aliases | hashed as | widens to | decoded from a connector's logical type "
            "| a captured database's types |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for t in self.types:
            aliases = ", ".join(f"`{alias}`" for alias in t.aliases) or "—"
            if t.family is Family.DECIMAL:
                widens = "a decimal with as many digits or more on both sides of the point"
            else:
                widens = ", ".join(f"`{name}`" for name in self.wider(t)) or "—"
            decoded = "yes" if t.connector_decoded else "no"
            spelled = ", ".join(f"`{name}`" for name in t.database_names) or "—"
            lines.append(
                f"| `{t.spelling}` | {aliases} | {t.hash_form} | {widens} | {decoded} | {spelled} |"
            )
        return "\n".join(lines) + "\n"


def _width(column: ColumnType) -> int:
    return column.width


def _widens_within_family(old: ColumnType, new: ColumnType) -> bool:
    return bool(old.family is new.family and old.width and new.width > old.width)


REGISTRY = TypeRegistry(TYPES)
normalize_type = REGISTRY.normalize
column_type = REGISTRY.get
type_change_problem = REGISTRY.change_problem
type_names = REGISTRY.names
from_database_type = REGISTRY.from_database
lowest_sequence_types = REGISTRY.lowest_sequence_types


def family(name: str) -> Family:
    """The family of a canonical type name."""
    return column_type(name).family


def decimal_scale(name: str) -> int:
    """The scale of a canonical ``decimal(p,s)``."""
    match = DECIMAL_PATTERN.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a decimal(p,s)")
    return int(match.group(2))
