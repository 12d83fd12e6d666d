"""Table configs (``tables/<name>.yml``): schema, loading and validation.

A table config says where a table's daily extract lands, how to parse it, which columns
it has (types, keys, columns ignored by change detection) and whether each extract is a
``full`` snapshot, a ``delta`` or a feed of ``changes`` (change events from a database log,
ordered by ``changes.sequence_by``). Validation collects *every* problem, each naming the file
and the field, so a user fixes a config in one pass.

The schema is declared once, as a JSON Schema (``tables.schema.json`` beside this module):
fields, types, enumerations, defaults, descriptions and each field's message
(``x-message``; ``x-unknown`` for an object's unknown fields). ``jsonschema`` checks a
config against it; the rules that involve several fields (``_table_rules``) sit beside it
here; the validated config becomes a frozen :class:`TableConfig`.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from hashcdc.column_types import (
    lowest_sequence_types,
    normalize_type,
    type_change_problem,
    type_names,
)
from hashcdc.errors import ConfigError
from hashcdc.registries import schema_with_registries
from hashcdc.relations import Relations

# The schema of tables/<name>.yml, declared once: its fields, types, enumerations, defaults,
# descriptions and each field's message. `hashcdc schema` prints it for editors; the rules
# that involve several fields are the functions below (`_table_rules`).
SCHEMA_FILE = Path(__file__).with_name("tables.schema.json")
SCHEMA: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
_SCHEMA_DEFS = {f"#/$defs/{name}": node for name, node in SCHEMA["$defs"].items()}
_TABLE = SCHEMA["properties"]
_SOURCE = SCHEMA["$defs"]["source"]["properties"]
_CHANGES = SCHEMA["$defs"]["changes"]["properties"]

EXTRACT_TYPES = tuple(_TABLE["extract_type"]["enum"])
# Spellings accepted for the operation of an event in csv/parquet feeds -> Debezium's letter.
OPERATION_SPELLINGS = {
    "c": "c",
    "i": "c",
    "insert": "c",
    "create": "c",
    "u": "u",
    "update": "u",
    "d": "d",
    "delete": "d",
    "r": "r",
    "read": "r",
    "snapshot": "r",
    "t": "t",
    "truncate": "t",
}
# Sequence fields whose natural order is text order (binlog file names are zero-padded), in
# the envelope and in the flattened form.
TEXT_SEQUENCE_FIELDS = ("source.file", "__file")
# What Debezium sends for a value it cannot read (unchanged TOASTed PostgreSQL columns).
DEBEZIUM_UNAVAILABLE_VALUE: str = _CHANGES["unavailable_value"]["default"]
# Column encodings for values that arrive in a connector's binary form (no schema wrapper).
COLUMN_ENCODINGS = tuple(
    e for e in SCHEMA["$defs"]["column"]["properties"]["encoding"]["enum"] if e is not None
)
NAME_PATTERN = re.compile(_TABLE["name"]["pattern"])
RESERVED_COLUMNS = (
    "keyhash",
    "nonkeyhash",
    "operation",
    "eff_start_date",
    "business_date",
    "event_op",
    "event_sequence",
    "before_keyhash",
    "copies",
)
CSV_OPTION_DEFAULTS: dict[str, Any] = {
    option: node["default"] for option, node in SCHEMA["$defs"]["csv"]["properties"].items()
}


@dataclass(frozen=True)
class ColumnConfig:
    """One configured column of a table."""

    name: str
    type: str
    key: bool = False
    ignore: bool = False
    nullable: bool = True
    description: str = ""
    format: str | None = None
    source_name: str | None = None
    encoding: str | None = None
    source_scale: int | None = None
    added: str | None = None
    added_as_update: bool = False
    removed: str | None = None
    renamed_from: tuple[str, ...] = ()
    widened_from: str | None = None
    widened_since: str | None = None
    sensitive: bool = False

    @property
    def source_field(self) -> str:
        """The column's name in the extract (header, parquet column or JSON field)."""
        return self.source_name or self.name

    @property
    def source_fields(self) -> tuple[str, ...]:
        """The names the column may have in an extract: its own, then its earlier ones."""
        return (self.source_field, *reversed(self.renamed_from))

    @property
    def hash_name(self) -> str:
        """The name its values are hashed under: the first it had, so a rename keeps hashes."""
        return self.renamed_from[0] if self.renamed_from else self.name

    def is_present_on(self, business_date: str) -> bool:
        """Whether the extract of a business date carries the column (added/removed)."""
        after_added = self.added is None or business_date >= self.added
        before_removed = self.removed is None or business_date < self.removed
        return after_added and before_removed

    def type_on(self, business_date: str) -> str:
        """The type the extract of a date is read with (before a widening, the earlier one)."""
        if self.widened_from and self.widened_since and business_date < self.widened_since:
            return self.widened_from
        return self.type


@dataclass(frozen=True)
class SourceConfig:
    """Where a table's extract for a business date lands and how to parse it."""

    path: str
    format: str = _SOURCE["format"]["default"]
    csv: dict[str, Any] = field(default_factory=lambda: dict(CSV_OPTION_DEFAULTS))

    def path_for(self, business_date: str) -> str:
        """The source path (file, folder or glob) for one business date."""
        return self.path.replace("{business_date}", business_date)


@dataclass(frozen=True)
class SequenceField:
    """One field of a change feed's sequence, compared in the order of ``sequence_by``."""

    field: str
    type: str = "bigint"
    # "lowest": an event without the field sorts before every event that has it (SQL
    # Server's snapshot reads carry commit_lsn only); None: such an event is rejected.
    missing: str | None = None

    @property
    def alias(self) -> str:
        """The field's name inside the ``event_sequence`` struct."""
        return re.sub(r"[^A-Za-z0-9_]", "_", self.field).lower()


@dataclass(frozen=True)
class ChangesConfig:
    """How to read and order the events of an ``extract_type: changes`` table."""

    sequence_by: tuple[SequenceField, ...]
    operation_column: str | None = None
    history: str = _CHANGES["history"]["default"]
    unavailable_value: str | None = DEBEZIUM_UNAVAILABLE_VALUE


@dataclass(frozen=True)
class TableConfig:
    """A validated table config."""

    name: str
    extract_type: str
    source: SourceConfig
    columns: tuple[ColumnConfig, ...]
    description: str = ""
    expected_counts_seed: str | None = None
    max_delete_fraction: float = _TABLE["max_delete_fraction"]["default"]
    max_reject_fraction: float = _TABLE["max_reject_fraction"]["default"]
    max_rejects: int | None = None
    duplicates_keep_last_by: str | None = None
    changelog: bool = _TABLE["changelog"]["default"]
    changes: ChangesConfig | None = None
    sensitive_grants: dict[str, list[str]] | None = None
    buckets: int | None = None
    enabled: bool = _TABLE["enabled"]["default"]
    history_retention_days: int | None = None
    rejects_retention_days: int | None = None
    config_file: str = ""

    @property
    def relations(self) -> Relations:
        """The names of the table's models and tables (:mod:`hashcdc.relations`)."""
        return Relations(self.name)

    @property
    def is_feed(self) -> bool:
        """Whether the extracts are change events rather than rows."""
        return self.extract_type == "changes"

    @property
    def is_keyless(self) -> bool:
        """A feed table without a primary key.

        All compared columns form the identity, and identical rows are counted (``copies``).
        """
        return self.is_feed and not any(c.key for c in self.columns)

    @property
    def key_columns(self) -> tuple[ColumnConfig, ...]:
        """Columns that identify a row; hashed into ``keyhash``."""
        if self.is_keyless:
            return tuple(c for c in self.columns if not c.ignore)
        return tuple(c for c in self.columns if c.key)

    @property
    def compared_columns(self) -> tuple[ColumnConfig, ...]:
        """Non-key, non-sensitive columns that take part in change detection (``nonkeyhash``)."""
        if self.is_keyless:
            return ()
        return tuple(c for c in self.columns if not c.key and not c.ignore and not c.sensitive)

    @property
    def sensitive_columns(self) -> tuple[ColumnConfig, ...]:
        """Columns stored only in the sensitive tables (their own hash: ``sensitive_hash``)."""
        return tuple(c for c in self.columns if c.sensitive)

    @property
    def main_columns(self) -> tuple[ColumnConfig, ...]:
        """The columns of the main tables (state, current, history, changelog)."""
        return tuple(c for c in self.columns if not c.sensitive)

    def as_read_on(self, business_date: str) -> TableConfig:
        """The table as the extract of a business date carries it.

        Only the columns present on that date (``added``/``removed``), each with the type it
        is read with (``widened``).
        """
        columns = tuple(
            dataclasses.replace(c, type=c.type_on(business_date))
            for c in self.columns
            if c.is_present_on(business_date)
        )
        return dataclasses.replace(self, columns=columns)

    @property
    def source_fields(self) -> list[tuple[tuple[str, ...], str]]:
        """(names in the extract, name in the lake) of each csv/parquet column, in order.

        A renamed column may carry any of its names (its own first).
        """
        fields = [(c.source_fields, c.name) for c in self.columns]
        if self.changes is None or self.changes.operation_column is None:
            return fields
        names = {c.name for c in self.columns}
        extra = [self.changes.operation_column]
        extra += [f.field for f in self.changes.sequence_by if f.field not in names]
        seen: set[str] = set()
        for name in extra:
            if name not in names and name not in seen:
                fields.append(((name,), name))
                seen.add(name)
        return fields

    def to_dict(self) -> dict[str, Any]:
        """A plain-data form, embedded in generated model properties."""
        data = asdict(self)
        # A column's fields at their defaults are left out: they are filled in again.
        defaults = asdict(ColumnConfig(name="", type=""))
        data["columns"] = [
            {k: v for k, v in asdict(c).items() if k in ("name", "type") or v != defaults[k]}
            for c in self.columns
        ]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableConfig:
        """Rebuild a config from :meth:`to_dict` output (already validated)."""
        source = SourceConfig(**data["source"])
        columns = tuple(
            ColumnConfig(**{**c, "renamed_from": tuple(c.get("renamed_from") or ())})
            for c in data["columns"]
        )
        changes = None
        if data.get("changes"):
            raw = dict(data["changes"])
            raw["sequence_by"] = tuple(SequenceField(**f) for f in raw["sequence_by"])
            changes = ChangesConfig(**raw)
        fields = {k: v for k, v in data.items() if k not in ("source", "columns", "changes")}
        return cls(source=source, columns=columns, changes=changes, **fields)


def _names(raw: Any) -> list[str]:
    """A name or a list of names as a list."""
    if raw is None:
        return []
    return [raw] if isinstance(raw, str) else list(raw)


def _dates_as_text(raw: Any) -> Any:
    """YAML reads an unquoted 2024-01-03 as a date: the lifecycle fields take it as text."""
    columns = raw.get("columns") if isinstance(raw, dict) else None
    for column in columns if isinstance(columns, list) else []:
        if not isinstance(column, dict):
            continue
        for name in ("added", "removed"):
            if isinstance(column.get(name), datetime.date):
                column[name] = column[name].isoformat()
        widened = column.get("widened")
        if isinstance(widened, dict) and isinstance(widened.get("since"), datetime.date):
            widened["since"] = widened["since"].isoformat()
    return raw


class _Problems:
    """Collects validation problems for one file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{self.file}: {where}: {message}")


def _where(raw: dict[str, Any], path: Sequence[Any]) -> str:
    """A field's place as messages name it: ``columns[0] (id).type``, ``source.csv.quote``."""
    text = ""
    node: Any = raw
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
            item = node[part] if isinstance(node, list) and part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            if path[0] == "columns" and isinstance(name, str) and NAME_PATTERN.match(name):
                text += f" ({name})"
            node = item
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text


def _schema_message(error: jsonschema.ValidationError) -> str:
    """The message of a schema node that a value fails: its ``x-message``, with the value."""
    message = error.schema.get("x-message") if isinstance(error.schema, dict) else None
    if message is None:
        return error.message
    return message.replace("{value!r}", repr(error.instance))


def _validator() -> jsonschema.Draft202012Validator:
    """The schema's validator, with the formats registered now (:mod:`hashcdc.inputs`)."""
    from hashcdc.inputs import format_names

    return _validator_for(format_names())


@functools.cache
def _validator_for(formats: tuple[str, ...]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema_with_registries(SCHEMA))


def _event_formats() -> tuple[str, ...]:
    # The readers import this module: asked when a config is validated, not at import.
    from hashcdc.inputs import event_format_names

    return event_format_names()


def _schema_problems(raw: dict[str, Any], problems: _Problems) -> None:
    """Every way ``raw`` fails the schema, with the field and the schema's own message."""
    for error in _validator().iter_errors(raw):
        _report(raw, error, problems)


def _report(raw: dict[str, Any], error: jsonschema.ValidationError, problems: _Problems) -> None:
    path = list(error.absolute_path)
    if error.validator == "oneOf" and error.context:
        # The failures of the alternative of the value's own kind (a mapping or a string)
        # say which field is wrong; without one, the node's own message does.
        chosen = _alternative_of(error)
        own_kind = [sub for sub in error.context if sub.relative_schema_path[0] == chosen]
        if own_kind:
            for failure in own_kind:
                _report(raw, failure, problems)
            return
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        what = error.schema.get("x-unknown", "unknown field")
        for extra in error.instance:
            if extra not in allowed:
                problems.add(_where(raw, [*path, extra]), f"{what} (allowed: {', '.join(allowed)})")
        return
    if error.validator == "required":
        for missing in error.validator_value:
            if missing not in error.instance:
                node = error.schema["properties"].get(missing, {})
                node = _SCHEMA_DEFS.get(node.get("$ref", ""), node)
                message = node.get("x-message", f"{missing} is required")
                problems.add(_where(raw, [*path, missing]), message.replace("{value!r}", "None"))
        return
    problems.add(_where(raw, path) or "(document)", _schema_message(error))


def _alternative_of(error: jsonschema.ValidationError) -> int:
    """Which alternative of a ``oneOf`` matches the kind of value given (mapping or text)."""
    kinds = {dict: "object", str: "string"}
    wanted = kinds.get(type(error.instance))
    for index, alternative in enumerate(error.validator_value):
        resolved = _SCHEMA_DEFS.get(alternative.get("$ref", ""), alternative)
        if wanted is not None and resolved.get("type") == wanted:
            return index
    return -1


def _column_rules(where: str, column: Any, problems: _Problems) -> None:
    """The rules of one column that involve more than one field, or its type's syntax."""
    if not isinstance(column, dict):
        return
    name = column.get("name")
    if name in RESERVED_COLUMNS:
        problems.add(f"{where}.name", f"'{name}' is reserved for hashcdc's own columns")
    raw_type = column.get("type", column.get("target_type"))
    column_type = normalize_type(raw_type)
    if (
        column_type is None
        and isinstance(raw_type, str)
        and raw_type.count("(") > raw_type.count(")")
    ):
        problems.add(
            f"{where}.type",
            f"{raw_type!r} looks cut at a comma: inside {{...}} write the type in quotes, "
            "e.g. type: 'decimal(10,2)'",
        )
    elif column_type is None:
        problems.add(
            f"{where}.type",
            f"unknown type {raw_type!r}; use one of {type_names()}",
        )
    key = column.get("key", False) is True
    if key and column.get("ignore") is True:
        problems.add(f"{where}.ignore", "a key column cannot be ignored by change detection")
    if key and column.get("nullable") is True:
        problems.add(f"{where}.nullable", "a key column cannot be nullable")
    fmt = column.get("format")
    if isinstance(fmt, str) and column_type not in ("date", "timestamp"):
        problems.add(f"{where}.format", "a format is a string, for date and timestamp columns only")
    encoding = column.get("encoding")
    if encoding in COLUMN_ENCODINGS and not (column_type or "").startswith("decimal"):
        problems.add(
            f"{where}.encoding", f"'{encoding}' decodes decimals: give a decimal(p,s) type"
        )
    if column.get("source_scale") is not None and encoding != "debezium_decimal":
        problems.add(
            f"{where}.source_scale",
            "only with encoding: debezium_decimal (the scale of the source column)",
        )
    _lifecycle_rules(where, column, column_type, problems)


def _lifecycle_rules(
    where: str, column: dict[str, Any], column_type: str | None, problems: _Problems
) -> None:
    """A column's shape changes: added/removed dates, widening, sensitivity of keys."""
    for name in ("added", "removed"):
        value = column.get(name)
        if isinstance(value, str) and _bad_date(value):
            problems.add(f"{where}.{name}", f"{value!r} is not a date (YYYY-MM-DD)")
    added, removed = column.get("added"), column.get("removed")
    if isinstance(added, str) and isinstance(removed, str) and removed <= added:
        problems.add(f"{where}.removed", f"must be after added ({added})")
    if column.get("added_as_update") is True and added is None:
        problems.add(f"{where}.added_as_update", "only with added (the column's first date)")
    if column.get("key") is True:
        for name in ("added", "removed", "sensitive"):
            if column.get(name) not in (None, False):
                problems.add(
                    f"{where}.{name}",
                    "not for a key column: the key identifies each row in every table",
                )
    widened = column.get("widened")
    if isinstance(widened, dict):
        earlier = normalize_type(widened.get("from"))
        since = widened.get("since")
        if isinstance(since, str) and _bad_date(since):
            problems.add(f"{where}.widened.since", f"{since!r} is not a date (YYYY-MM-DD)")
        if earlier is None:
            problems.add(f"{where}.widened.from", f"unknown type {widened.get('from')!r}")
        elif column_type is not None:
            problem = type_change_problem(earlier, column_type)
            if problem or earlier == column_type:
                problems.add(
                    f"{where}.widened",
                    (problem or f"from {earlier} to {column_type} is no change")
                    + "; to change a column's type otherwise, add a new column (and mark this "
                    "one removed), or rebuild the tables with replay from the first date",
                )


def _bad_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return True
    return not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text)


def _columns_rules(columns: list[Any], extract_type: Any, problems: _Problems) -> None:
    """The rules of the column list as a whole: names, source fields, keys."""
    mappings = [c for c in columns if isinstance(c, dict)]
    for index, column in enumerate(columns):
        _column_rules(_where({"columns": columns}, ["columns", index]), column, problems)
    names = [c.get("name") for c in mappings if isinstance(c.get("name"), str)]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.add("columns", f"duplicate column name '{name}'")
    sources = [str(c.get("source_name") or c.get("name")).lower() for c in mappings]
    for source in sorted({s for s in sources if sources.count(s) > 1}):
        problems.add("columns", f"two columns read the same source field '{source}'")
    earlier = [(n, c.get("name")) for c in mappings for n in _names(c.get("renamed_from"))]
    for old, new in earlier:
        if old in names:
            problems.add(
                "columns",
                f"'{new}' is renamed from '{old}', which is still a column: a renamed column "
                "keeps one name",
            )
    keys = [c for c in mappings if c.get("key") is True]
    if not keys and any(c.get("sensitive") is True for c in mappings):
        problems.add(
            "columns",
            "sensitive columns need a key: the sensitive tables are keyed by keyhash",
        )
    if mappings and not keys and extract_type != "changes":
        problems.add("columns", "no key column: mark at least one column with 'key: true'")
    if mappings and not keys and all(c.get("ignore") is True for c in mappings):
        problems.add("columns", "a table without a key needs at least one compared column")


def _sequence_field(item: Any) -> dict[str, Any] | None:
    """A sequence field as a mapping (a string is its path); None when it is neither."""
    if isinstance(item, str):
        return {"field": item}
    return item if isinstance(item, dict) else None


def _changes_rules(raw: dict[str, Any], problems: _Problems) -> None:
    """The ``changes`` block: required for change feeds, refused otherwise, and its rules."""
    block = raw.get("changes")
    source = raw.get("source")
    fmt = source.get("format", "csv") if isinstance(source, dict) else "csv"
    if raw.get("extract_type") != "changes":
        if block is not None:
            problems.add("changes", "only for extract_type: changes")
        if fmt in _event_formats():
            problems.add(
                "source.format", f"'{fmt}' carries change events: use extract_type: changes"
            )
        return
    if block is None:
        problems.add("changes", _SCHEMA_DEFS["#/$defs/changes"]["x-message"])
        return
    if not isinstance(block, dict):
        return  # the schema says so
    raw_fields = block.get("sequence_by")
    items = [raw_fields] if isinstance(raw_fields, str) else raw_fields
    fields = [_sequence_field(i) for i in items] if isinstance(items, list) else []
    paths = [f.get("field") for f in fields if f and isinstance(f.get("field"), str)]
    for index, item in enumerate(fields):
        if not item or not isinstance(item.get("field"), str):
            continue
        where = f"changes.sequence_by[{index}]"
        field_type = _sequence_type(item)
        if field_type is None:
            problems.add(f"{where}.type", f"unknown type {item.get('type')!r}")
        elif item.get("missing") == "lowest" and field_type not in lowest_sequence_types():
            problems.add(
                f"{where}.missing",
                f"'lowest' is for {', '.join(lowest_sequence_types())} fields, not {field_type}",
            )
    aliases = [SequenceField(path).alias for path in paths]
    if len(set(aliases)) != len(aliases):
        problems.add("changes.sequence_by", "names the same field twice")
    operation_column = block.get("operation_column")
    if fmt in _event_formats():
        if operation_column is not None:
            problems.add("changes.operation_column", f"not used by format '{fmt}' (it has op)")
    else:
        if not isinstance(operation_column, str):
            problems.add(
                "changes.operation_column",
                f"a {fmt} feed needs the name of its operation column (values "
                f"c/u/d/r/t or insert/update/delete/read/truncate), got {operation_column!r}",
            )
        for path in paths:
            if "." in path:
                problems.add(
                    "changes.sequence_by", f"'{path}': a {fmt} feed orders by its own columns"
                )
        columns = raw.get("columns")
        names = (
            {c.get("name") for c in columns if isinstance(c, dict)}
            if isinstance(columns, list)
            else set()
        )
        if operation_column in names:
            problems.add("changes.operation_column", f"'{operation_column}' is a configured column")
    if raw.get("duplicates_keep_last_by") is not None:
        problems.add(
            "duplicates_keep_last_by", "not for change feeds: changes.sequence_by orders events"
        )


def _sequence_type(item: dict[str, Any]) -> str | None:
    """A sequence field's normalized type (text for binlog file names, else bigint)."""
    default = "string" if item.get("field") in TEXT_SEQUENCE_FIELDS else "bigint"
    return normalize_type(item.get("type", default))


def _table_rules(raw: dict[str, Any], file: str, problems: _Problems) -> None:
    """The rules that involve more than one field of a table config."""
    name = raw.get("name")
    stem = Path(file).stem
    if isinstance(name, str) and NAME_PATTERN.match(name) and stem != name:
        problems.add("name", f"'{name}' must match the file name '{stem}.yml'")
    columns = raw.get("columns")
    if isinstance(columns, list) and columns:
        _columns_rules(columns, raw.get("extract_type"), problems)
    keep_last_by = raw.get("duplicates_keep_last_by")
    if isinstance(keep_last_by, str) and raw.get("extract_type") != "changes":
        by_name = {c.get("name"): c for c in columns or [] if isinstance(c, dict)}
        if keep_last_by not in by_name:
            problems.add(
                "duplicates_keep_last_by", f"must name a configured column, got {keep_last_by!r}"
            )
        elif by_name[keep_last_by].get("key") is True:
            problems.add("duplicates_keep_last_by", "must be a non-key column")
    _changes_rules(raw, problems)


def _build(raw: dict[str, Any], file: str) -> TableConfig:
    """The TableConfig of a valid config, defaults filled in from the schema."""
    source = raw["source"]
    if isinstance(source, str):
        source = {"path": source}
    csv_options = dict(CSV_OPTION_DEFAULTS)
    if "delimiter" in raw:  # the article's configs put the delimiter at the top level
        csv_options["delimiter"] = raw["delimiter"]
    csv_options.update(source.get("csv") or {})
    columns = []
    for column in raw["columns"]:
        key = column.get("key", False)
        columns.append(
            ColumnConfig(
                name=column["name"],
                type=str(normalize_type(column.get("type", column.get("target_type")))),
                key=key,
                ignore=column.get("ignore", False),
                nullable=column.get("nullable", not key),
                description=str(column.get("description") or ""),
                format=column.get("format"),
                source_name=column.get("source_name"),
                encoding=column.get("encoding"),
                source_scale=column.get("source_scale"),
                added=column.get("added"),
                added_as_update=column.get("added_as_update", False),
                removed=column.get("removed"),
                renamed_from=tuple(_names(column.get("renamed_from"))),
                widened_from=normalize_type((column.get("widened") or {}).get("from")),
                widened_since=(column.get("widened") or {}).get("since"),
                sensitive=column.get("sensitive", False),
            )
        )
    changes = None
    block = raw.get("changes")
    if raw["extract_type"] == "changes" and isinstance(block, dict):
        items = block["sequence_by"]
        fields = [_sequence_field(i) for i in ([items] if isinstance(items, str) else items)]
        changes = ChangesConfig(
            sequence_by=tuple(
                SequenceField(f["field"], str(_sequence_type(f)), f.get("missing"))
                for f in fields
                if f
            ),
            operation_column=block.get("operation_column"),
            history=block.get("history", _CHANGES["history"]["default"]),
            unavailable_value=block.get(
                "unavailable_value", _CHANGES["unavailable_value"]["default"]
            ),
        )
    # Only a count given: the count alone limits the rejects. Neither: 1% of the rows.
    default_fraction = 1.0 if "max_rejects" in raw else _TABLE["max_reject_fraction"]["default"]
    return TableConfig(
        name=raw["name"],
        extract_type=raw["extract_type"],
        source=SourceConfig(
            path=source["path"],
            format=source.get("format", _SOURCE["format"]["default"]),
            csv=csv_options,
        ),
        columns=tuple(columns),
        description=str(raw.get("description") or ""),
        expected_counts_seed=raw.get("expected_counts_seed"),
        max_delete_fraction=float(
            raw.get("max_delete_fraction", _TABLE["max_delete_fraction"]["default"])
        ),
        max_reject_fraction=float(raw.get("max_reject_fraction", default_fraction)),
        max_rejects=raw.get("max_rejects"),
        duplicates_keep_last_by=raw.get("duplicates_keep_last_by"),
        changelog=raw.get("changelog", _TABLE["changelog"]["default"]),
        changes=changes,
        sensitive_grants=raw.get("sensitive_grants"),
        buckets=raw.get("buckets"),
        enabled=raw.get("enabled", _TABLE["enabled"]["default"]),
        history_retention_days=raw.get("history_retention_days"),
        rejects_retention_days=raw.get("rejects_retention_days"),
        config_file=file,
    )


def parse_table_config(raw: Any, file: str) -> tuple[TableConfig | None, list[str]]:
    """Validate one table config's raw YAML data against the schema and its rules.

    Parameters
    ----------
    raw : Any
        The parsed YAML document.
    file : str
        The file it came from, used in every problem message.

    Returns
    -------
    tuple[TableConfig | None, list[str]]
        The config (None when invalid) and the list of problems, each naming file and field.

    """
    problems = _Problems(file)
    raw = _dates_as_text(raw)
    if not isinstance(raw, dict):
        problems.add("(document)", "must be a mapping with name, extract_type, source, columns")
        return None, problems.items
    _schema_problems(raw, problems)
    _table_rules(raw, file, problems)
    if problems.items:
        return None, problems.items
    return _build(raw, file), []


def load_table_configs(tables_dir: Path) -> list[TableConfig]:
    """Load and validate every ``*.yml`` in ``tables_dir``.

    Raises
    ------
    ConfigError
        Listing every problem in every file.

    """
    problems: list[str] = []
    configs: list[TableConfig] = []
    files = sorted(list(tables_dir.glob("*.yml")) + list(tables_dir.glob("*.yaml")))
    if not tables_dir.is_dir():
        raise ConfigError(f"{tables_dir}: no tables/ folder; run hashcdc from the project folder")
    for path in files:
        relative = f"{tables_dir.name}/{path.name}"
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            problems.append(f"{relative}: not valid YAML: {exc}")
            continue
        config, file_problems = parse_table_config(raw, relative)
        problems.extend(file_problems)
        if config is not None:
            configs.append(config)
    if problems:
        raise ConfigError(
            f"{len(problems)} problem(s) in table configs:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return configs
