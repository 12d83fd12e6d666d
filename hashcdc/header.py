"""The extract's columns against the table config, checked before anything is read.

Spark's CSV reader takes columns by position when it is given a schema, so a reordered
header would silently load values into the wrong columns. The driver reads the first line
of each file (through Hadoop's file system API, decompressing when needed) and compares
the names; parquet extracts are compared by column name.
"""

from __future__ import annotations

import csv
from typing import Any

from pyspark.sql import SparkSession

from hashcdc.config import TableConfig
from hashcdc.errors import InputDataError
from hashcdc.hadoop import HadoopFiles

MAX_REPORTED_FILES = 10


def _header_fields(line: str, options: dict[str, Any]) -> list[str]:
    """The field names of a CSV header line, parsed with the table's CSV options."""
    dialect: dict[str, Any] = {"delimiter": options["delimiter"], "quotechar": options["quote"]}
    if options["escape"] != options["quote"]:
        dialect.update(escapechar=options["escape"], doublequote=False)
    fields = next(csv.reader([line.lstrip("\ufeff")], **dialect), [])
    return [f.strip().lower() for f in fields]


def header_differences(expected: list[str], actual: list[str]) -> list[str]:
    """What differs between the configured columns and a header, in words; [] if equal."""
    missing = [name for name in expected if name not in actual]
    extra = [name for name in actual if name not in expected]
    problems = []
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    if extra:
        problems.append(f"extra column(s) {', '.join(extra)}")
    if not missing and not extra and actual != expected:
        problems.append(f"columns in another order: {', '.join(actual)}")
    return problems


def check_header(spark: SparkSession, table: TableConfig, files: list[str]) -> None:
    """Refuse extracts whose header (CSV) or columns (parquet) differ from the config.

    Spark's CSV reader would silently take columns by position, so a reordered header
    would load values into the wrong columns.

    Raises
    ------
    InputDataError
        Listing, per file, the missing, extra or reordered columns.

    """
    # Field names compare case-insensitively, as Spark resolves columns.
    expected = [name.lower() for name in table.source_columns]
    reports = []
    if table.source.format == "parquet":
        actual = [name.lower() for name in spark.read.parquet(*files).columns]
        differences = [d for d in header_differences(expected, actual) if "order" not in d]
        if differences:
            reports.append(f"  - {files[0]}: {'; '.join(differences)}")
    elif table.source.csv["header"]:
        files_api = HadoopFiles.of(spark)
        for file in files:
            line = files_api.first_line(file, table.source.csv["encoding"])
            if not line.strip():
                continue  # an empty file: no header, no rows
            differences = header_differences(expected, _header_fields(line, table.source.csv))
            if differences:
                reports.append(f"  - {file}: {'; '.join(differences)}")
    if reports:
        raise InputDataError(
            f"table '{table.name}': the extract's columns differ from the columns of "
            f"{table.config_file} ({', '.join(expected)}); nothing was written.\n"
            + "\n".join(reports[:MAX_REPORTED_FILES])
            + "\nFix the extract, or change the columns in the config (a column that is added "
            "or removed changes the table's schema)."
        )
