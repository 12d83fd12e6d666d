"""The extract's columns against the table config: the comparison, the message, the fix.

Each input format's reader (:mod:`hashcdc.pipeline.inputs`) reads its files' column names (a CSV
header, parquet's schema, the fields of JSON events) and asks this module what differs,
what type a new column's values suggest, and for the one message that refuses a date's
extract with the YAML lines that would load the new columns.
"""

from __future__ import annotations

import re

from hashcdc.config import TableConfig
from hashcdc.errors import InputDataError

MAX_REPORTED_FILES = 10
# Rows read to infer the type of a column the config does not have.
SAMPLE_ROWS = 1000


def expected_fields(table: TableConfig) -> list[tuple[str, ...]]:
    """Each configured column's names in an extract, lower-case (Spark matches so)."""
    return [tuple(n.lower() for n in names) for names, _ in table.source_fields]


def header_differences(expected: list[tuple[str, ...]], actual: list[str]) -> list[str]:
    """What differs between the configured columns and a header, in words; [] if equal.

    Each expected column is the tuple of names it may have (a renamed column: any of them).
    """
    missing = [names[0] for names in expected if not any(n in actual for n in names)]
    extra = unexpected_columns(expected, actual)
    problems = []
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    if extra:
        problems.append(f"extra column(s) {', '.join(extra)}")
    if not missing and not extra:
        order = [next(i for i, names in enumerate(expected) if n in names) for n in actual]
        if order != sorted(order):
            problems.append(f"columns in another order: {', '.join(actual)}")
    return problems


def unexpected_columns(expected: list[tuple[str, ...]], actual: list[str]) -> list[str]:
    """The extract's columns that the config does not have, in the extract's order."""
    known = {name for names in expected for name in names}
    return [name for name in actual if name not in known]


def inferred_type(values: list[str]) -> str:
    """The narrowest config type that reads every sample value (text when none does)."""
    present = [v.strip() for v in values if v is not None and v.strip() != ""]
    if not present:
        return "string"
    if all(re.fullmatch(r"[-+]?\d+", v) for v in present):
        return "int" if all(-(2**31) <= int(v) < 2**31 for v in present) else "bigint"
    if all(re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", v) for v in present):
        return "double"
    if all(v.lower() in ("true", "false") for v in present):
        return "boolean"
    if all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) for v in present):
        return "date"
    if all(
        re.fullmatch(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?", v) for v in present
    ):
        return "timestamp"
    return "string"


def new_columns_yaml(columns: dict[str, str], business_date: str) -> str:
    """The lines to add under ``columns:`` for columns new in the extract of a date."""
    return "".join(
        f"  - name: {name}\n    type: {column_type}\n    added: '{business_date}'\n"
        for name, column_type in columns.items()
    )


def new_columns_suggestion(columns: dict[str, str], table: TableConfig, business_date: str) -> str:
    """The notice of new columns, with the YAML lines that load them from a date on."""
    return (
        f"\nColumn(s) new in the extract: {', '.join(columns)}. To load them from "
        f"{business_date} on, add to the columns of {table.config_file} (types inferred from "
        "the data; check them):\n" + new_columns_yaml(columns, business_date)
    )


def refuse_other_columns(
    table: TableConfig, business_date: str, reports: list[str], new_columns: dict[str, str]
) -> None:
    """Refuse a date's extract whose files have other columns than the config.

    ``table`` is the table as read on the date (:meth:`TableConfig.as_read_on`): a column
    added later or removed earlier is not expected.

    Parameters
    ----------
    table : TableConfig
        The table as read on the date.
    business_date : str
        The date.
    reports : list of str
        A line per file that differs (nothing to refuse when empty).
    new_columns : dict
        Columns the config lacks -> the type their values suggest.

    Raises
    ------
    InputDataError
        Listing, per file, the missing, extra or reordered columns; for columns the config
        does not have, the YAML lines that add them (with types inferred from the data).

    """
    if not reports:
        return
    expected_names = ", ".join(names[0] for names in expected_fields(table))
    raise InputDataError(
        f"table '{table.name}': the extract of {business_date} has other columns than "
        f"{table.config_file} ({expected_names}); nothing was written.\n"
        + "\n".join(reports[:MAX_REPORTED_FILES])
        + (new_columns_suggestion(new_columns, table, business_date) if new_columns else "")
        + "\nFix the extract, or change the columns in the config "
        "(docs/schema-evolution.md: added, removed, renamed_from, widened)."
    )
