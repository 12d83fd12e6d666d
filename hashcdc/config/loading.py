"""Reading ``tables/*.yml``: parse, validate (schema and rules), build the TableConfig."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import yaml

from hashcdc.column_types import (
    normalize_type,
)
from hashcdc.config.model import (
    ChangesConfig,
    ColumnConfig,
    DatabaseSource,
    SequenceField,
    SourceConfig,
    TableConfig,
)
from hashcdc.config.rules import as_names, sequence_field, sequence_type, table_rules
from hashcdc.config.schema import (
    CHANGES_FIELDS,
    CSV_OPTION_DEFAULTS,
    SOURCE_FIELDS,
    TABLE_FIELDS,
    Problems,
    schema_problems,
)
from hashcdc.errors import ConfigError


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
                renamed_from=tuple(as_names(column.get("renamed_from"))),
                widened_from=normalize_type((column.get("widened") or {}).get("from")),
                widened_since=(column.get("widened") or {}).get("since"),
                sensitive=column.get("sensitive", False),
            )
        )
    changes = None
    block = raw.get("changes")
    if raw["extract_type"] == "changes" and isinstance(block, dict):
        items = block["sequence_by"]
        fields = [sequence_field(i) for i in ([items] if isinstance(items, str) else items)]
        changes = ChangesConfig(
            sequence_by=tuple(
                SequenceField(f["field"], str(sequence_type(f)), f.get("missing"))
                for f in fields
                if f
            ),
            operation_column=block.get("operation_column"),
            history=block.get("history", CHANGES_FIELDS["history"]["default"]),
            unavailable_value=block.get(
                "unavailable_value", CHANGES_FIELDS["unavailable_value"]["default"]
            ),
        )
    # Only a count given: the count alone limits the rejects. Neither: 1% of the rows.
    default_fraction = (
        1.0 if "max_rejects" in raw else TABLE_FIELDS["max_reject_fraction"]["default"]
    )
    return TableConfig(
        name=raw["name"],
        extract_type=raw["extract_type"],
        source=SourceConfig(
            path=source["path"],
            format=source.get("format", SOURCE_FIELDS["format"]["default"]),
            csv=csv_options,
            database=DatabaseSource(**source["database"]) if source.get("database") else None,
        ),
        columns=tuple(columns),
        description=str(raw.get("description") or ""),
        expected_counts_seed=raw.get("expected_counts_seed"),
        max_delete_fraction=float(
            raw.get("max_delete_fraction", TABLE_FIELDS["max_delete_fraction"]["default"])
        ),
        max_reject_fraction=float(raw.get("max_reject_fraction", default_fraction)),
        max_rejects=raw.get("max_rejects"),
        duplicates_keep_last_by=raw.get("duplicates_keep_last_by"),
        changelog=raw.get("changelog", TABLE_FIELDS["changelog"]["default"]),
        changes=changes,
        sensitive_grants=raw.get("sensitive_grants"),
        buckets=raw.get("buckets"),
        enabled=raw.get("enabled", TABLE_FIELDS["enabled"]["default"]),
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
    problems = Problems(file)
    raw = _dates_as_text(raw)
    if not isinstance(raw, dict):
        problems.add("(document)", "must be a mapping with name, extract_type, source, columns")
        return None, problems.items
    schema_problems(raw, problems)
    table_rules(raw, file, problems)
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
