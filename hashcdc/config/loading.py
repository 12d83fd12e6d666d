"""Reading ``tables/*.yml``: parse, validate (schema and rules), build the TableConfig."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import yaml

from hashcdc.column_types import (
    normalize_type,
)
from hashcdc.config.declaration import build
from hashcdc.config.model import TableConfig
from hashcdc.config.rules import (
    as_names,
    group_problems,
    sequence_field,
    sequence_type,
    table_rules,
)
from hashcdc.config.schema import CSV_OPTION_DEFAULTS, Problems, schema_problems
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


def _column_fields(column: dict[str, Any]) -> dict[str, Any]:
    """A column's YAML spelled as the fields of :class:`ColumnConfig`."""
    fields = {k: v for k, v in column.items() if k not in ("target_type", "widened")}
    fields["type"] = str(normalize_type(column.get("type", column.get("target_type"))))
    fields["nullable"] = column.get("nullable", not column.get("key", False))
    fields["renamed_from"] = as_names(column.get("renamed_from"))
    widened = column.get("widened") or {}
    fields["widened_from"] = normalize_type(widened.get("from"))
    fields["widened_since"] = widened.get("since")
    return fields


def _fields(raw: dict[str, Any], file: str) -> dict[str, Any]:
    """A valid config's YAML spelled as the fields of :class:`TableConfig`.

    The spellings a file may use besides the fields' own: a source given as its path, the
    article's top-level ``delimiter`` and ``target_type``, ``widened: {from, since}``, a
    sequence field given as its path.
    """
    fields = {k: v for k, v in raw.items() if k != "delimiter"}
    source = raw["source"]
    source = dict({"path": source} if isinstance(source, str) else source)
    csv_options = dict(CSV_OPTION_DEFAULTS)
    if "delimiter" in raw:
        csv_options["delimiter"] = raw["delimiter"]
    csv_options.update(source.get("csv") or {})
    fields["source"] = source | {"csv": csv_options}
    fields["columns"] = [_column_fields(column) for column in raw["columns"]]
    block = raw.get("changes")
    if raw["extract_type"] == "changes" and isinstance(block, dict):
        items = block["sequence_by"]
        sequence = [sequence_field(i) for i in ([items] if isinstance(items, str) else items)]
        fields["changes"] = block | {
            "sequence_by": [f | {"type": str(sequence_type(f))} for f in sequence if f]
        }
    else:
        fields.pop("changes", None)
    if "max_rejects" in raw and "max_reject_fraction" not in raw:
        fields["max_reject_fraction"] = 1.0  # only a count given: the count alone limits
    if "max_delete_fraction" in raw:
        fields["max_delete_fraction"] = float(raw["max_delete_fraction"])
    if "max_reject_fraction" in raw:
        fields["max_reject_fraction"] = float(raw["max_reject_fraction"])
    return fields | {"config_file": file}


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
    return build(TableConfig, _fields(raw, file)), []


# libyaml's safe loader where PyYAML has it: a command reads every config (100 tables:
# 0.4 s with the pure-Python loader).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
            raw = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)  # noqa: S506
        except yaml.YAMLError as exc:
            problems.append(f"{relative}: not valid YAML: {exc}")
            continue
        config, file_problems = parse_table_config(raw, relative)
        problems.extend(file_problems)
        if config is not None:
            configs.append(config)
    problems.extend(group_problems(configs))
    if problems:
        raise ConfigError(
            f"{len(problems)} problem(s) in table configs:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return configs
