"""Table configs (``tables/<name>.yml``): schema, loading and validation.

A table config says where a table's daily extract lands, how to parse it, which columns
it has (types, keys, columns ignored by change detection) and whether each extract is a
``full`` snapshot or a ``delta``. Validation collects *every* problem, each naming the file
and the field, so a user fixes a config in one pass.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hashcdc.errors import ConfigError

EXTRACT_TYPES = ("full", "delta")
SOURCE_FORMATS = ("csv", "parquet")
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
    config_file: str = ""

    @property
    def key_columns(self) -> tuple[ColumnConfig, ...]:
        """Columns that identify a row; hashed into ``keyhash``."""
        return tuple(c for c in self.columns if c.key)

    @property
    def compared_columns(self) -> tuple[ColumnConfig, ...]:
        """Non-key columns that take part in change detection (``nonkeyhash``)."""
        return tuple(c for c in self.columns if not c.key and not c.ignore)

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
        fields = {k: v for k, v in data.items() if k not in ("source", "columns")}
        return cls(source=source, columns=columns, **fields)


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
        "source_type",
        "key",
        "ignore",
        "nullable",
        "description",
        "format",
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
    return ColumnConfig(
        name=name,
        type=column_type,
        key=key,
        ignore=ignore,
        nullable=nullable,
        description=str(description),
        format=fmt,
    )


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
        if columns and not any(c.key for c in columns):
            problems.add("columns", "no key column: mark at least one column with 'key: true'")
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
