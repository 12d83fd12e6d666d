"""Delimited text extracts (``source.format: csv``), read with ``source.csv``'s options.

Spark's CSV reader takes columns by position when it is given a schema, so each file's
header is compared with the config first (read by the driver, decompressing when needed):
a reordered header would otherwise load values into the wrong columns.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias
from pyspark.sql.types import StringType, StructField, StructType

from hashcdc.config import TableConfig, setting
from hashcdc.pipeline.columns import CORRUPT_RECORD
from hashcdc.pipeline.extract import first_line
from hashcdc.pipeline.header import (
    SAMPLE_ROWS,
    expected_fields,
    header_differences,
    inferred_type,
    refuse_other_columns,
    unexpected_columns,
)
from hashcdc.pipeline.inputs.base import Reader
from hashcdc.pipeline.projections import selected
from hashcdc.pipeline.transports.files import position_columns
from hashcdc.runtime.hadoop import HadoopFiles

# Spark's CSV reader reports an unquoted empty field as its nullValue and a quoted empty
# field ("") as "". With this marker (never in real data) as nullValue, `a,,b` reads as
# null and `a,"",b` as the empty string, as in PostgreSQL's CSV format.
UNQUOTED_EMPTY_MARKER = "\u0001"


@dataclass(frozen=True, kw_only=True)
class CsvOptions:
    """The options of a csv extract (``source.csv``; a plain mapping in the config)."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "csv",
        "description": "CSV options.",
        "x-unknown": "unknown csv option",
        "x-message": "must be a mapping of csv options",
    }

    delimiter: str = setting(",", schema={"$ref": "#/$defs/character"})
    header: bool = setting(True, schema={"$ref": "#/$defs/flag"})
    quote: str = setting('"', schema={"$ref": "#/$defs/character"})
    escape: str = setting('"', schema={"$ref": "#/$defs/character"})
    encoding: str = setting("UTF-8", message="must be a charset name, got {value!r}")
    null_value: str = setting("", message="must be the text of a null value, got {value!r}")
    multiline: bool = setting(False, schema={"$ref": "#/$defs/flag"})


def header_fields(line: str, options: dict[str, Any]) -> list[str]:
    """The field names of a CSV header line, parsed with the table's CSV options."""
    dialect: dict[str, Any] = {"delimiter": options["delimiter"], "quotechar": options["quote"]}
    if options["escape"] != options["quote"]:
        dialect.update(escapechar=options["escape"], doublequote=False)
    fields = next(csv.reader([line.lstrip("\ufeff")], **dialect), [])
    return [f.strip().lower() for f in fields]


def spark_csv_options(table: TableConfig) -> dict[str, object]:
    """Spark's CSV options for ``source.csv`` (how the pipeline reads a table's files)."""
    options = table.source.csv
    return {
        "header": options["header"],
        "sep": options["delimiter"],
        "quote": options["quote"],
        "escape": options["escape"],
        "encoding": options["encoding"],
    }


def _sample_values(
    spark: SparkSession, table: TableConfig, file: str, names: list[str]
) -> dict[str, list[str]]:
    """Up to SAMPLE_ROWS values of some columns of a CSV file, read by its header."""
    frame = spark.read.options(**{**spark_csv_options(table), "header": True}).csv(file)
    by_lower = {c.lower(): c for c in frame.columns}
    # Spark's header parser may name a column differently from Python's: no sample then.
    found = [n for n in names if n in by_lower]
    rows = frame.select(*[F.col(f"`{by_lower[n]}`") for n in found]).limit(SAMPLE_ROWS).collect()
    samples = {name: [row[i] for row in rows] for i, name in enumerate(found)}
    return {name: samples.get(name, []) for name in names}


class CsvReader(Reader):
    """CSV files: a header line (``source.csv.header``), then a row per line (or per record)."""

    name: ClassVar[str] = "csv"
    description: ClassVar[str] = "delimited text (source.csv sets its options)"
    malformed_row: ClassVar[str] = (
        "malformed row: wrong number of fields or broken quoting (quoted values with line "
        "breaks need source.csv.multiline: true)"
    )
    options: ClassVar[type | None] = CsvOptions

    def encoding(self, table: TableConfig) -> str:
        """``source.csv.encoding``."""
        return str(table.source.csv["encoding"])

    def header_lines(self, table: TableConfig) -> int:
        """One line when the files have a header."""
        return 1 if table.source.csv["header"] else 0

    def rows_span_lines(self, table: TableConfig) -> bool:
        """Quoted line breaks (``source.csv.multiline``) make a row span lines."""
        return bool(table.source.csv.get("multiline"))

    def check_columns(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        business_date: str,
        sampled: list[str] | None = None,
        heads: dict[str, bytes] | None = None,
    ) -> None:
        """Refuse files whose header differs from the columns the date's extract carries.

        A header is taken from the file's first bytes when they were read already
        (``heads``) and hold all of it.
        """
        del sampled  # the check reads every file's header, not a sample
        heads = heads or {}
        if not table.source.csv["header"]:
            return
        read = table.as_read_on(business_date)
        expected = expected_fields(read)
        reports = []
        new_columns: dict[str, str] = {}
        files_api = HadoopFiles.of(spark)
        for file in files:
            line = first_line(heads[file], self.encoding(table)) if file in heads else None
            if line is None:
                line = files_api.first_line(file, self.encoding(table))
            if not line.strip():
                continue  # an empty file: no header, no rows
            actual = header_fields(line, table.source.csv)
            differences = header_differences(expected, actual)
            if differences:
                reports.append(f"  - {file}: {'; '.join(differences)}")
            extra = [n for n in unexpected_columns(expected, actual) if n not in new_columns]
            if extra:
                samples = _sample_values(spark, table, file, extra)
                new_columns |= {name: inferred_type(samples[name]) for name in extra}
        refuse_other_columns(read, business_date, reports, new_columns)

    def read_rows(self, spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
        """The rows by position (the header was checked), named as in the lake."""
        options = table.source.csv
        schema = StructType(
            [StructField(name, StringType(), True) for _, name in table.source_fields]
            + [StructField(CORRUPT_RECORD, StringType(), True)]
        )
        frame = (
            spark.read.schema(schema)
            .options(**spark_csv_options(table))
            .option("nullValue", options["null_value"] or UNQUOTED_EMPTY_MARKER)
            .option("multiLine", options.get("multiline", False))
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
            .csv(files)
        )
        return selected(frame, "positioned", lambda: ["*", *position_columns()])
