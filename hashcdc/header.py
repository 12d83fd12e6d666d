"""The extract's columns against the table config, checked before anything is read.

Spark's CSV reader takes columns by position when it is given a schema, so a reordered
header would silently load values into the wrong columns. The driver reads the first line
of each file (through Hadoop's file system API, decompressing when needed) and compares
the names; parquet extracts are compared by column name.
"""

from __future__ import annotations

import csv
import re
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.column_types import normalize_type
from hashcdc.config import TableConfig
from hashcdc.errors import InputDataError
from hashcdc.extract import LINE_COLUMN, read_event_lines
from hashcdc.hadoop import HadoopFiles

MAX_REPORTED_FILES = 10
# Rows read to infer the type of a column the config does not have.
SAMPLE_ROWS = 1000


def _header_fields(line: str, options: dict[str, Any]) -> list[str]:
    """The field names of a CSV header line, parsed with the table's CSV options."""
    dialect: dict[str, Any] = {"delimiter": options["delimiter"], "quotechar": options["quote"]}
    if options["escape"] != options["quote"]:
        dialect.update(escapechar=options["escape"], doublequote=False)
    fields = next(csv.reader([line.lstrip("\ufeff")], **dialect), [])
    return [f.strip().lower() for f in fields]


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


def _sample_csv_values(
    spark: SparkSession, table: TableConfig, file: str, names: list[str]
) -> dict[str, list[str]]:
    """Up to SAMPLE_ROWS values of some columns of a CSV file, read by its header."""
    options = table.source.csv
    frame = (
        spark.read.option("header", True)
        .option("sep", options["delimiter"])
        .option("quote", options["quote"])
        .option("escape", options["escape"])
        .option("encoding", options["encoding"])
        .csv(file)
    )
    by_lower = {c.lower(): c for c in frame.columns}
    # Spark's header parser may name a column differently from Python's: no sample then.
    found = [n for n in names if n in by_lower]
    rows = frame.select(*[F.col(f"`{by_lower[n]}`") for n in found]).limit(SAMPLE_ROWS).collect()
    samples = {name: [row[i] for row in rows] for i, name in enumerate(found)}
    return {name: samples.get(name, []) for name in names}


def _suggestion(columns: dict[str, str], table: TableConfig, business_date: str) -> str:
    return (
        f"\nColumn(s) new in the extract: {', '.join(columns)}. To load them from "
        f"{business_date} on, add to the columns of {table.config_file} (types inferred from "
        "the data; check them):\n" + new_columns_yaml(columns, business_date)
    )


def report_new_event_fields(
    spark: SparkSession, table: TableConfig, files: list[str], business_date: str
) -> None:
    """Name the fields of a JSON feed's row images that the config does not have.

    Events are loaded whatever other fields they carry, so this is a notice, not a refusal:
    it shows the YAML lines that would load them, with types inferred from a sample.
    """
    lines = read_event_lines(spark, files).limit(SAMPLE_ROWS)
    line = F.col(LINE_COLUMN)
    if table.source.format == "debezium":
        paths = ["$.payload.after", "$.after", "$.payload.before", "$.before"]
    else:
        paths = ["$.payload"]
    image = F.coalesce(*[F.get_json_object(line, path) for path in paths], line)
    images = lines.select(image.alias("image")).where(F.col("image").startswith("{")).cache()
    keys = images.select(F.explode(F.json_object_keys("image")).alias("key")).distinct()
    known = {name.lower() for c in table.columns for name in c.source_fields}
    known |= {f.field.lower() for f in table.changes.sequence_by} if table.changes else set()
    new = sorted(
        row["key"]
        for row in keys.collect()
        if row["key"].lower() not in known and not row["key"].startswith("__")
    )
    if new:
        samples = images.select(
            *[F.get_json_object("image", f"$['{key}']").alias(key) for key in new]
        ).collect()
        columns = {key: inferred_type([row[key] for row in samples]) for key in new}
        print(
            f"hashcdc: table '{table.name}', business date {business_date}: the events carry "
            f"field(s) that {table.config_file} does not have, and they are not loaded: "
            f"{', '.join(new)}.{_suggestion(columns, table, business_date)}",
            flush=True,
        )
    images.unpersist()


def check_header(
    spark: SparkSession, table: TableConfig, files: list[str], business_date: str
) -> None:
    """Refuse extracts whose header (CSV) or columns (parquet) differ from the config.

    ``table`` is the table as read on the date (:meth:`TableConfig.as_read_on`): a column
    added later or removed earlier is not expected. Spark's CSV reader would silently take
    columns by position, so a reordered header would load values into the wrong columns.

    Raises
    ------
    InputDataError
        Listing, per file, the missing, extra or reordered columns; for columns the config
        does not have, the YAML lines that add them (with types inferred from the data).

    """
    # Field names compare case-insensitively, as Spark resolves columns.
    expected = [tuple(n.lower() for n in names) for names, _ in table.source_fields]
    reports = []
    new_columns: dict[str, str] = {}
    if table.source.format == "parquet":
        frame = spark.read.parquet(*files)
        actual = [name.lower() for name in frame.columns]
        differences = [d for d in header_differences(expected, actual) if "order" not in d]
        if differences:
            reports.append(f"  - {files[0]}: {'; '.join(differences)}")
        types = {f.name.lower(): f.dataType.simpleString() for f in frame.schema.fields}
        for name in unexpected_columns(expected, actual):
            new_columns[name] = normalize_type(types[name]) or "string"
    elif table.source.csv["header"]:
        files_api = HadoopFiles.of(spark)
        for file in files:
            line = files_api.first_line(file, table.source.csv["encoding"])
            if not line.strip():
                continue  # an empty file: no header, no rows
            actual = _header_fields(line, table.source.csv)
            differences = header_differences(expected, actual)
            if differences:
                reports.append(f"  - {file}: {'; '.join(differences)}")
            extra = [n for n in unexpected_columns(expected, actual) if n not in new_columns]
            if extra:
                samples = _sample_csv_values(spark, table, file, extra)
                new_columns |= {name: inferred_type(samples[name]) for name in extra}
    if reports:
        expected_names = ", ".join(names[0] for names in expected)
        raise InputDataError(
            f"table '{table.name}': the extract of {business_date} has other columns than "
            f"{table.config_file} ({expected_names}); nothing was written.\n"
            + "\n".join(reports[:MAX_REPORTED_FILES])
            + (_suggestion(new_columns, table, business_date) if new_columns else "")
            + "\nFix the extract, or change the columns in the config "
            "(docs/schema-evolution.md: added, removed, renamed_from, widened)."
        )
