"""Table configs (``tables/<name>.yml``): schema, loading and validation.

A table config says where a table's daily extract lands, how to parse it, which columns
it has (types, keys, columns ignored by change detection) and whether each extract is a
``full`` snapshot, a ``delta`` or a feed of ``changes`` (change events from a database log,
ordered by ``changes.sequence_by``). Validation collects *every* problem, each naming the file
and the field, so a user fixes a config in one pass.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hashcdc.errors import ConfigError

EXTRACT_TYPES = ("full", "delta", "changes")
SOURCE_FORMATS = ("csv", "parquet", "debezium", "debezium_flat")
# Formats that only carry change events (JSON lines, one event per line).
EVENT_FORMATS = ("debezium", "debezium_flat")
HISTORY_MODES = ("net", "audit")
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
# Numbers since the epoch, as Debezium writes dates and timestamps by default.
EPOCH_FORMATS = {
    "date": ("epoch_days",),
    "timestamp": ("epoch_seconds", "epoch_millis", "epoch_micros"),
}
FIELD_PATH_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# Sequence fields whose natural order is text order (binlog file names are zero-padded), in
# the envelope and in the flattened form.
TEXT_SEQUENCE_FIELDS = ("source.file", "__file")
# The value a sequence field with `missing: lowest` takes when an event lacks it.
LOWEST_SEQUENCE_VALUES: dict[str, Any] = {
    "string": "",
    "tinyint": -(2**7),
    "smallint": -(2**15),
    "int": -(2**31),
    "bigint": -(2**63),
}
# What Debezium sends for a value it cannot read (unchanged TOASTed PostgreSQL columns).
DEBEZIUM_UNAVAILABLE_VALUE = "__debezium_unavailable_value"
# Column encodings for values that arrive in a connector's binary form (no schema wrapper).
COLUMN_ENCODINGS = ("debezium_decimal", "debezium_variable_decimal")
SIMPLE_TYPES = (
    "string",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "boolean",
    "date",
    "timestamp",
)
TYPE_ALIASES = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "real": "float",
    "bool": "boolean",
    "str": "string",
    "varchar": "string",
    "text": "string",
}
DECIMAL_PATTERN = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
NAME_PATTERN = re.compile(r"^[a-z_][a-z0-9_]*$")
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
    "delimiter": ",",
    "header": True,
    "quote": '"',
    "escape": '"',
    "encoding": "UTF-8",
    "null_value": "",
    "multiline": False,
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

    @property
    def source_field(self) -> str:
        """The column's name in the extract (header, parquet column or JSON field)."""
        return self.source_name or self.name


@dataclass(frozen=True)
class SourceConfig:
    """Where a table's extract for a business date lands and how to parse it."""

    path: str
    format: str = "csv"
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
    history: str = "net"
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
    max_delete_fraction: float = 0.5
    max_reject_fraction: float = 0.01
    max_rejects: int | None = None
    duplicates_keep_last_by: str | None = None
    changelog: bool = False
    changes: ChangesConfig | None = None
    config_file: str = ""

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
        """Non-key columns that take part in change detection (``nonkeyhash``)."""
        if self.is_keyless:
            return ()
        return tuple(c for c in self.columns if not c.key and not c.ignore)

    @property
    def source_fields(self) -> list[tuple[str, str]]:
        """(name in the extract, name in the lake) of each csv/parquet column, in order."""
        fields = [(c.source_field, c.name) for c in self.columns]
        if self.changes is None or self.changes.operation_column is None:
            return fields
        names = {c.name for c in self.columns}
        extra = [self.changes.operation_column]
        extra += [f.field for f in self.changes.sequence_by if f.field not in names]
        seen: set[str] = set()
        for name in extra:
            if name not in names and name not in seen:
                fields.append((name, name))
                seen.add(name)
        return fields

    @property
    def source_columns(self) -> list[str]:
        """The columns a csv/parquet extract must have, in order, as the extract names them."""
        return [source for source, _ in self.source_fields]

    def to_dict(self) -> dict[str, Any]:
        """A plain-data form, embedded in generated model properties."""
        data = asdict(self)
        data["columns"] = [asdict(c) for c in self.columns]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableConfig:
        """Rebuild a config from :meth:`to_dict` output (already validated)."""
        source = SourceConfig(**data["source"])
        columns = tuple(ColumnConfig(**c) for c in data["columns"])
        changes = None
        if data.get("changes"):
            raw = dict(data["changes"])
            raw["sequence_by"] = tuple(SequenceField(**f) for f in raw["sequence_by"])
            changes = ChangesConfig(**raw)
        fields = {k: v for k, v in data.items() if k not in ("source", "columns", "changes")}
        return cls(source=source, columns=columns, changes=changes, **fields)


def normalize_type(raw: Any) -> str | None:
    """Canonical Spark type name for a configured type, or None if unsupported."""
    if not isinstance(raw, str):
        return None
    text = raw.strip().lower()
    text = TYPE_ALIASES.get(text, text)
    if text in SIMPLE_TYPES:
        return text
    if text == "decimal":
        return "decimal(10,0)"
    match = DECIMAL_PATTERN.match(text)
    if match:
        precision, scale = int(match.group(1)), int(match.group(2))
        if 1 <= precision <= 38 and scale <= precision:
            return f"decimal({precision},{scale})"
    return None


class _Problems:
    """Collects validation problems for one file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{self.file}: {where}: {message}")


def _as_bool(value: Any, where: str, problems: _Problems) -> bool:
    if isinstance(value, bool):
        return value
    problems.add(where, f"must be true or false, got {value!r}")
    return False


def _parse_column(index: int, raw: Any, problems: _Problems) -> ColumnConfig | None:
    where = f"columns[{index}]"
    if not isinstance(raw, dict):
        problems.add(where, "must be a mapping with at least 'name' and 'type'")
        return None
    known = {
        "name",
        "type",
        "target_type",
        "key",
        "ignore",
        "nullable",
        "description",
        "format",
        "source_name",
        "encoding",
        "source_scale",
    }
    for unknown in sorted(set(raw) - known):
        problems.add(f"{where}.{unknown}", f"unknown field (allowed: {', '.join(sorted(known))})")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        problems.add(
            f"{where}.name",
            f"must be a lower-case identifier (letters, digits, _), got {name!r}",
        )
        return None
    where = f"columns[{index}] ({name})"
    if name in RESERVED_COLUMNS:
        problems.add(f"{where}.name", f"'{name}' is reserved for hashcdc's own columns")
    raw_type = raw.get("type", raw.get("target_type"))
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
        column_type = "string"
    elif column_type is None:
        problems.add(
            f"{where}.type",
            f"unknown type {raw_type!r}; use one of {', '.join(SIMPLE_TYPES)} or decimal(p,s)",
        )
        column_type = "string"
    key = _as_bool(raw.get("key", False), f"{where}.key", problems)
    ignore = _as_bool(raw.get("ignore", False), f"{where}.ignore", problems)
    nullable = _as_bool(raw.get("nullable", not key), f"{where}.nullable", problems)
    if key and ignore:
        problems.add(f"{where}.ignore", "a key column cannot be ignored by change detection")
    if key and nullable:
        problems.add(f"{where}.nullable", "a key column cannot be nullable")
    fmt = raw.get("format")
    if fmt is not None and (not isinstance(fmt, str) or column_type not in ("date", "timestamp")):
        problems.add(f"{where}.format", "a format is a string, for date and timestamp columns only")
        fmt = None
    description = raw.get("description", "") or ""
    source_name = raw.get("source_name")
    if source_name is not None and (not isinstance(source_name, str) or not source_name.strip()):
        problems.add(
            f"{where}.source_name", f"must be the field's name in the extract, got {source_name!r}"
        )
        source_name = None
    encoding, source_scale = _parse_encoding(raw, column_type, where, problems)
    return ColumnConfig(
        name=name,
        type=column_type,
        key=key,
        ignore=ignore,
        nullable=nullable,
        description=str(description),
        format=fmt,
        source_name=source_name,
        encoding=encoding,
        source_scale=source_scale,
    )


def _parse_encoding(
    raw: dict[str, Any], column_type: str, where: str, problems: _Problems
) -> tuple[str | None, int | None]:
    """A column's ``encoding`` (a connector's binary decimal form) and ``source_scale``."""
    encoding = raw.get("encoding")
    source_scale = raw.get("source_scale")
    if encoding is not None and encoding not in COLUMN_ENCODINGS:
        problems.add(
            f"{where}.encoding", f"must be one of {', '.join(COLUMN_ENCODINGS)}, got {encoding!r}"
        )
        encoding = None
    if encoding is not None and not column_type.startswith("decimal"):
        problems.add(
            f"{where}.encoding", f"'{encoding}' decodes decimals: give a decimal(p,s) type"
        )
        encoding = None
    if source_scale is not None:
        if encoding != "debezium_decimal":
            problems.add(
                f"{where}.source_scale",
                "only with encoding: debezium_decimal (the scale of the source column)",
            )
            source_scale = None
        elif (
            isinstance(source_scale, bool)
            or not isinstance(source_scale, int)
            or not (0 <= source_scale <= 38)
        ):
            problems.add(
                f"{where}.source_scale", f"must be a whole number 0-38, got {source_scale!r}"
            )
            source_scale = None
    return encoding, source_scale


def _parse_source(raw: dict[str, Any], problems: _Problems) -> SourceConfig:
    source = raw.get("source")
    if isinstance(source, str):
        source = {"path": source}
    if not isinstance(source, dict):
        problems.add("source", "missing; give at least source.path with {business_date} in it")
        return SourceConfig(path="{business_date}")
    path = source.get("path")
    if not isinstance(path, str) or "{business_date}" not in path:
        problems.add(
            "source.path",
            f"must be a path template containing {{business_date}}, got {path!r}",
        )
        path = "{business_date}"
    fmt = source.get("format", "csv")
    if fmt not in SOURCE_FORMATS:
        problems.add("source.format", f"must be one of {', '.join(SOURCE_FORMATS)}, got {fmt!r}")
        fmt = "csv"
    csv_options = dict(CSV_OPTION_DEFAULTS)
    if "delimiter" in raw:  # the article's configs put the delimiter at the top level
        csv_options["delimiter"] = raw["delimiter"]
    given = source.get("csv", {}) or {}
    if not isinstance(given, dict):
        problems.add("source.csv", "must be a mapping of csv options")
        given = {}
    for option, value in given.items():
        if option not in CSV_OPTION_DEFAULTS:
            problems.add(
                f"source.csv.{option}",
                f"unknown csv option (allowed: {', '.join(CSV_OPTION_DEFAULTS)})",
            )
            continue
        csv_options[option] = value
    for option in ("delimiter", "quote", "escape"):
        value = csv_options[option]
        if not isinstance(value, str) or len(value) != 1:
            problems.add(f"source.csv.{option}", f"must be a single character, got {value!r}")
    for option in ("header", "multiline"):
        if not isinstance(csv_options[option], bool):
            problems.add(f"source.csv.{option}", "must be true or false")
    for unknown in sorted(set(source) - {"path", "format", "csv"}):
        problems.add(f"source.{unknown}", "unknown field (allowed: path, format, csv)")
    return SourceConfig(path=path, format=fmt, csv=csv_options)


def _parse_sequence_field(index: int, raw: Any, problems: _Problems) -> SequenceField | None:
    where = f"changes.sequence_by[{index}]"
    if isinstance(raw, str):
        raw = {"field": raw}
    if not isinstance(raw, dict):
        problems.add(where, "must be a field path (e.g. source.lsn) or {field: ..., type: ...}")
        return None
    for unknown in sorted(set(raw) - {"field", "type", "missing"}):
        problems.add(f"{where}.{unknown}", "unknown field (allowed: field, type, missing)")
    path = raw.get("field")
    if not isinstance(path, str) or not FIELD_PATH_PATTERN.match(path):
        problems.add(f"{where}.field", f"must be a field path like source.lsn, got {path!r}")
        return None
    default_type = "string" if path in TEXT_SEQUENCE_FIELDS else "bigint"
    field_type = normalize_type(raw.get("type", default_type))
    if field_type is None:
        problems.add(f"{where}.type", f"unknown type {raw.get('type')!r}")
        return None
    missing = raw.get("missing")
    if missing is not None and missing != "lowest":
        problems.add(f"{where}.missing", f"must be 'lowest' (or left out), got {missing!r}")
        missing = None
    if missing is not None and field_type not in LOWEST_SEQUENCE_VALUES:
        problems.add(
            f"{where}.missing",
            f"'lowest' is for {', '.join(LOWEST_SEQUENCE_VALUES)} fields, not {field_type}",
        )
        missing = None
    return SequenceField(field=path, type=field_type, missing=missing)


def _parse_changes(
    raw: dict[str, Any], extract_type: Any, source: SourceConfig, problems: _Problems
) -> ChangesConfig | None:
    """The ``changes`` block: required for change feeds, refused otherwise."""
    block = raw.get("changes")
    if extract_type != "changes":
        if block is not None:
            problems.add("changes", "only for extract_type: changes")
        if source.format in EVENT_FORMATS:
            problems.add(
                "source.format",
                f"'{source.format}' carries change events: use extract_type: changes",
            )
        return None
    if not isinstance(block, dict):
        problems.add(
            "changes",
            "missing: a change feed needs changes.sequence_by, the event fields that order its "
            "events (e.g. [source.lsn], or [source.file, source.pos] for a MySQL binlog)",
        )
        return None
    allowed = ("sequence_by", "operation_column", "history", "unavailable_value")
    for unknown in sorted(set(block) - set(allowed)):
        problems.add(f"changes.{unknown}", f"unknown field (allowed: {', '.join(allowed)})")
    raw_fields = block.get("sequence_by")
    if isinstance(raw_fields, str):
        raw_fields = [raw_fields]
    fields: list[SequenceField] = []
    if not isinstance(raw_fields, list) or not raw_fields:
        problems.add("changes.sequence_by", "must be a non-empty list of event fields")
    else:
        for index, item in enumerate(raw_fields):
            parsed = _parse_sequence_field(index, item, problems)
            if parsed is not None:
                fields.append(parsed)
    if len({f.alias for f in fields}) != len(fields):
        problems.add("changes.sequence_by", "names the same field twice")
    operation_column = block.get("operation_column")
    if source.format in EVENT_FORMATS:
        if operation_column is not None:
            problems.add(
                "changes.operation_column", f"not used by format '{source.format}' (it has op)"
            )
            operation_column = None
    else:
        if not isinstance(operation_column, str) or not NAME_PATTERN.match(operation_column):
            problems.add(
                "changes.operation_column",
                f"a {source.format} feed needs the name of its operation column (values "
                f"c/u/d/r/t or insert/update/delete/read/truncate), got {operation_column!r}",
            )
            operation_column = None
        for item in fields:
            if "." in item.field:
                problems.add(
                    "changes.sequence_by",
                    f"'{item.field}': a {source.format} feed orders by its own columns",
                )
    history = block.get("history", "net")
    if history not in HISTORY_MODES:
        problems.add(
            "changes.history", f"must be one of {', '.join(HISTORY_MODES)}, got {history!r}"
        )
        history = "net"
    unavailable_value = block.get("unavailable_value", DEBEZIUM_UNAVAILABLE_VALUE)
    if unavailable_value is not None and (
        not isinstance(unavailable_value, str) or not unavailable_value
    ):
        problems.add(
            "changes.unavailable_value",
            f"must be the connector's placeholder text (or null to turn it off), got "
            f"{unavailable_value!r}",
        )
        unavailable_value = DEBEZIUM_UNAVAILABLE_VALUE
    return ChangesConfig(
        sequence_by=tuple(fields),
        operation_column=operation_column,
        history=history,
        unavailable_value=unavailable_value,
    )


def _fraction(
    raw: dict[str, Any], name: str, default: float, allowed: str, problems: _Problems
) -> float:
    """A top-level field that must be a number from 0 to 1; the default when absent."""
    value = raw.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        problems.add(name, f"must be a number from {allowed}, got {value!r}")
        return default
    return float(value)


def parse_table_config(raw: Any, file: str) -> tuple[TableConfig | None, list[str]]:
    """Validate one table config's raw YAML data.

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
    if not isinstance(raw, dict):
        problems.add("(document)", "must be a mapping with name, extract_type, source, columns")
        return None, problems.items
    known = {
        "name",
        "description",
        "extract_type",
        "source",
        "columns",
        "delimiter",
        "expected_counts_seed",
        "max_delete_fraction",
        "max_reject_fraction",
        "max_rejects",
        "duplicates_keep_last_by",
        "changelog",
        "changes",
    }
    for unknown in sorted(set(raw) - known):
        problems.add(unknown, f"unknown field (allowed: {', '.join(sorted(known))})")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        problems.add("name", f"must be a lower-case identifier (letters, digits, _), got {name!r}")
        name = "invalid"
    stem = Path(file).stem
    if name != "invalid" and stem != name:
        problems.add("name", f"'{name}' must match the file name '{stem}.yml'")
    extract_type = raw.get("extract_type")
    if extract_type not in EXTRACT_TYPES:
        problems.add(
            "extract_type",
            f"must be one of {', '.join(EXTRACT_TYPES)}, got {extract_type!r}",
        )
    source = _parse_source(raw, problems)
    raw_columns = raw.get("columns")
    columns: list[ColumnConfig] = []
    if not isinstance(raw_columns, list) or not raw_columns:
        problems.add("columns", "must be a non-empty list of columns")
    else:
        for index, raw_column in enumerate(raw_columns):
            column = _parse_column(index, raw_column, problems)
            if column is not None:
                columns.append(column)
        seen: set[str] = set()
        for column in columns:
            if column.name in seen:
                problems.add("columns", f"duplicate column name '{column.name}'")
            seen.add(column.name)
        sources = [c.source_field.lower() for c in columns]
        for source in sorted({s for s in sources if sources.count(s) > 1}):
            problems.add("columns", f"two columns read the same source field '{source}'")
        if columns and not any(c.key for c in columns) and extract_type != "changes":
            problems.add("columns", "no key column: mark at least one column with 'key: true'")
        if (
            columns
            and all(c.ignore for c in columns if not c.key)
            and not any(c.key for c in columns)
        ):
            problems.add("columns", "a table without a key needs at least one compared column")
    seed = raw.get("expected_counts_seed")
    if seed is not None and (not isinstance(seed, str) or not NAME_PATTERN.match(seed)):
        problems.add("expected_counts_seed", f"must be a seed name, got {seed!r}")
    max_delete_fraction = _fraction(
        raw, "max_delete_fraction", 0.5, "0 to 1 (1 turns the guard off)", problems
    )
    # Only a count given: the count alone limits the rejects. Neither: 1% of the rows.
    max_reject_fraction = _fraction(
        raw,
        "max_reject_fraction",
        1.0 if "max_rejects" in raw else 0.01,
        "0 (no rejects allowed) to 1",
        problems,
    )
    max_rejects = raw.get("max_rejects")
    if max_rejects is not None and (
        isinstance(max_rejects, bool) or not isinstance(max_rejects, int) or max_rejects < 0
    ):
        problems.add("max_rejects", f"must be a whole number >= 0, got {max_rejects!r}")
        max_rejects = None
    keep_last_by = raw.get("duplicates_keep_last_by")
    if keep_last_by is not None:
        names = {c.name: c for c in columns}
        if keep_last_by not in names:
            problems.add(
                "duplicates_keep_last_by",
                f"must name a configured column, got {keep_last_by!r}",
            )
        elif names[keep_last_by].key:
            problems.add("duplicates_keep_last_by", "must be a non-key column")
    changelog = _as_bool(raw.get("changelog", False), "changelog", problems)
    changes = _parse_changes(raw, extract_type, source, problems)
    if changes is not None:
        if keep_last_by is not None:
            problems.add(
                "duplicates_keep_last_by", "not for change feeds: changes.sequence_by orders events"
            )
        clashes = {changes.operation_column} & {c.name for c in columns}
        if clashes:
            problems.add("changes.operation_column", f"'{clashes.pop()}' is a configured column")
    if problems.items:
        return None, problems.items
    config = TableConfig(
        name=name,
        extract_type=str(extract_type),
        source=source,
        columns=tuple(columns),
        description=str(raw.get("description", "") or ""),
        expected_counts_seed=seed,
        max_delete_fraction=max_delete_fraction,
        max_reject_fraction=max_reject_fraction,
        max_rejects=max_rejects,
        duplicates_keep_last_by=keep_last_by,
        changelog=changelog,
        changes=changes,
        config_file=file,
    )
    return config, []


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
