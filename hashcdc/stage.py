"""The typecast-and-hash stage: one pass over a table's extract for one business date.

Called by the generated dbt Python model ``stg_<table>``. The stage reads the extract with
every column as text, casts each configured column to its type with ``try_cast`` (so a bad
value never raises mid-job), records per row the columns that failed, and computes
``keyhash`` and ``nonkeyhash`` (see :mod:`hashcdc.hashing`). All per-row work is native
Spark; nothing runs in Python per row.

After dbt has written the stage table, :func:`validate_stage` looks at the one
``_row_errors`` column; if any row failed it re-reads the failing file(s) to find the row
numbers and raises :class:`~hashcdc.errors.InputDataError` naming table, file, row and
column. The state and history models then never run, so the previous state is untouched.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias
from pyspark.sql.types import StringType, StructField, StructType

from hashcdc.config import ColumnConfig, TableConfig
from hashcdc.errors import HashcdcError, InputDataError
from hashcdc.hashing import with_row_hashes

SOURCE_FILE_COLUMN = "_source_file"
ROW_ERRORS_COLUMN = "_row_errors"
CORRUPT_RECORD_COLUMN = "_corrupt_record"
MAX_REPORTED_ROWS = 10
# Spark's CSV reader reports an unquoted empty field as its nullValue and a quoted empty
# field ("") as "". With this marker (never in real data) as nullValue, `a,,b` reads as
# null and `a,"",b` as the empty string, as in PostgreSQL's CSV format.
UNQUOTED_EMPTY_MARKER = "\u0001"


def parse_business_date(value: Any) -> str:
    """Validate a business date given as ``YYYY-MM-DD``; returns it unchanged."""
    if value in (None, "", "None"):
        raise HashcdcError(
            "business_date is not set: run `hashcdc run --date YYYY-MM-DD` or "
            "`dbt build --vars '{business_date: YYYY-MM-DD}'`"
        )
    text = str(value)
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        raise HashcdcError(f"business_date {text!r} is not a date in YYYY-MM-DD form") from None
    return text


def resolve_source_path(table: TableConfig, business_date: str) -> str:
    """The extract's path for a date; relative paths are taken from the project folder."""
    path = table.source.path_for(business_date)
    if "://" in path or os.path.isabs(path):
        return path
    project_dir = os.environ.get("DBT_PROJECT_DIR") or os.getcwd()
    return os.path.normpath(os.path.join(project_dir, path))


def _input_files(spark: SparkSession, path: str) -> list[str]:
    """Data files under a path (file, folder or glob), via Hadoop's file system API."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - the Hadoop FS API is only on the JVM
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(hadoop_conf)
    statuses = fs.globStatus(hadoop_path) or []
    files: list[str] = []
    for status in statuses:
        if status.isDirectory():
            for child in fs.listStatus(status.getPath()):
                name = child.getPath().getName()
                if child.isFile() and not name.startswith((".", "_")):
                    files.append(child.getPath().toString())
        else:
            files.append(status.getPath().toString())
    return sorted(files)


def _first_line(spark: SparkSession, file: str, encoding: str) -> str:
    """The first line of a (possibly compressed) text file, read by the driver."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - the Hadoop FS API is only on the JVM
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
    path = jvm.org.apache.hadoop.fs.Path(file)
    stream = path.getFileSystem(hadoop_conf).open(path)
    codec = jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(hadoop_conf).getCodec(path)
    if codec is not None:
        stream = codec.createInputStream(stream)
    reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, encoding))
    try:
        return reader.readLine() or ""
    finally:
        reader.close()


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
    expected = [c.name for c in table.columns]
    reports = []
    if table.source.format == "parquet":
        actual = [name.lower() for name in spark.read.parquet(*files).columns]
        differences = [d for d in header_differences(expected, actual) if "order" not in d]
        if differences:
            reports.append(f"  - {files[0]}: {'; '.join(differences)}")
    elif table.source.csv["header"]:
        for file in files:
            line = _first_line(spark, file, table.source.csv["encoding"])
            if not line.strip():
                continue  # an empty file: no header, no rows
            differences = header_differences(expected, _header_fields(line, table.source.csv))
            if differences:
                reports.append(f"  - {file}: {'; '.join(differences)}")
    if reports:
        raise InputDataError(
            f"table '{table.name}': the extract's columns differ from the columns of "
            f"{table.config_file} ({', '.join(expected)}); nothing was written.\n"
            + "\n".join(reports[:MAX_REPORTED_ROWS])
            + "\nFix the extract, or change the columns in the config (a column that is added "
            "or removed changes the table's schema)."
        )


def _raw_reader(spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
    """The extract with every configured column as text, plus the source file name."""
    if table.source.format == "parquet":
        frame = spark.read.parquet(*files)
        selected = [F.col(c.name).cast("string").alias(c.name) for c in table.columns]
        return frame.select(
            *selected,
            F.lit(None).cast("string").alias(CORRUPT_RECORD_COLUMN),
            F.col("_metadata.file_path").alias(SOURCE_FILE_COLUMN),
        )
    options = table.source.csv
    schema = StructType(
        [StructField(c.name, StringType(), True) for c in table.columns]
        + [StructField(CORRUPT_RECORD_COLUMN, StringType(), True)]
    )
    frame = (
        spark.read.schema(schema)
        .option("header", options["header"])
        .option("sep", options["delimiter"])
        .option("quote", options["quote"])
        .option("escape", options["escape"])
        .option("encoding", options["encoding"])
        .option("nullValue", options["null_value"] or UNQUOTED_EMPTY_MARKER)
        .option("multiLine", options.get("multiline", False))
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD_COLUMN)
        .csv(files)
    )
    return frame.withColumn(SOURCE_FILE_COLUMN, F.col("_metadata.file_path"))


def _typed_value(raw: Column, column: ColumnConfig) -> Column:
    """Cast a text value to the configured type; null where it does not cast.

    ``try_cast`` trims surrounding white space itself and never raises, whatever
    ``spark.sql.ansi.enabled`` says.
    """
    if column.type == "string":
        return raw
    if column.type == "timestamp" and column.format:
        return F.try_to_timestamp(F.trim(raw), F.lit(column.format))
    if column.type == "date" and column.format:
        return F.to_date(F.try_to_timestamp(F.trim(raw), F.lit(column.format)))
    return raw.try_cast(column.type)


def _is_present(raw: Column, column: ColumnConfig) -> Column:
    """Whether the raw text holds a value ("" is a value for strings only)."""
    if column.type == "string":
        return raw.isNotNull()
    return raw.isNotNull() & (F.trim(raw) != "")


def _column_failed(raw: Column, typed: Column, column: ColumnConfig) -> Column:
    """True when the value does not cast, or is missing where it is required."""
    # typed first: the left operand of `&` is always evaluated, so Spark computes the cast
    # once for the flag and the output column (common subexpression elimination).
    failed = typed.isNull() & raw.isNotNull()
    if column.type != "string":
        failed = failed & (F.trim(raw) != "")
    if not column.nullable:
        failed = failed | ~_is_present(raw, column)
    return failed


def _column_message(raw: Column, typed: Column, column: ColumnConfig) -> Column:
    """Why a value cannot be loaded; null when it can."""
    described = f"column '{column.name}' ({column.type}"
    described += f", format '{column.format}')" if column.format else ")"
    present = _is_present(raw, column)
    message = F.when(
        present & typed.isNull(),
        F.concat(F.lit(f"{described}: value '"), raw, F.lit("' does not cast")),
    )
    if not column.nullable:
        what = "key column" if column.key else "non-nullable column"
        message = message.when(~present, F.lit(f"{what} '{column.name}' is empty"))
    return message


def _typed_with_errors(
    raw: DataFrame, table: TableConfig, keep: tuple[str, ...] = (SOURCE_FILE_COLUMN,)
) -> DataFrame:
    typed = {c.name: _typed_value(F.col(c.name), c) for c in table.columns}
    is_malformed = F.col(CORRUPT_RECORD_COLUMN).isNotNull()
    has_errors = is_malformed
    for column in table.columns:
        has_errors = has_errors | _column_failed(F.col(column.name), typed[column.name], column)
    # Messages are built only for failing rows: a cheap flag guards the costly array.
    messages = F.array_compact(
        F.array(
            F.when(
                is_malformed,
                F.lit(
                    "malformed row: wrong number of fields or broken quoting (quoted values "
                    "with line breaks need source.csv.multiline: true)"
                ),
            ),
            *[_column_message(F.col(c.name), typed[c.name], c) for c in table.columns],
        )
    )
    return raw.select(
        *[typed[c.name].alias(c.name) for c in table.columns],
        F.when(has_errors, messages).alias(ROW_ERRORS_COLUMN),
        *[F.col(name) for name in keep],
    )


def typecast_and_hash(
    spark: SparkSession, table_data: dict[str, Any], business_date: Any
) -> DataFrame:
    """Build the stage DataFrame of one table for one business date.

    Parameters
    ----------
    spark : SparkSession
        The active session.
    table_data : dict
        The table config as embedded by ``hashcdc generate`` (``TableConfig.to_dict``).
    business_date : str
        ``YYYY-MM-DD``.

    Returns
    -------
    DataFrame
        Configured columns (typed), ``keyhash``, ``nonkeyhash``, ``business_date``,
        ``_source_file`` and ``_row_errors`` (null when the row is fine).

    Raises
    ------
    InputDataError
        When no extract exists for the date.

    """
    table = TableConfig.from_dict(table_data)
    date = parse_business_date(business_date)
    path = resolve_source_path(table, date)
    files = _input_files(spark, path)
    if not files:
        raise InputDataError(
            f"table '{table.name}': no extract for business date {date}: expected "
            f"{table.source.format} data at {path} (source.path in {table.config_file}). "
            "Nothing was written; deliver the extract and re-run the date."
        )
    check_header(spark, table, files)
    typed = _typed_with_errors(_raw_reader(spark, table, files), table)
    hashed = with_row_hashes(typed, list(table.key_columns), list(table.compared_columns))
    return hashed.select(
        *[F.col(c.name) for c in table.columns],
        "keyhash",
        "nonkeyhash",
        F.lit(date).cast("date").alias("business_date"),
        F.col(SOURCE_FILE_COLUMN),
        F.col(ROW_ERRORS_COLUMN),
    )


def _failing_rows(spark: SparkSession, table: TableConfig, files: list[str]) -> list[Any]:
    """Re-read the extract with row numbers and return the first failing rows."""
    raw = _raw_reader(spark, table, files).withColumn(
        "_read_order", F.monotonically_increasing_id()
    )
    # Within one file, Spark reads splits in offset order and numbers rows increasingly.
    numbered = raw.withColumn(
        "_row_number",
        F.row_number().over(Window.partitionBy(SOURCE_FILE_COLUMN).orderBy("_read_order")),
    )
    checked = _typed_with_errors(numbered, table, keep=(SOURCE_FILE_COLUMN, "_row_number"))
    return (
        checked.where(F.col(ROW_ERRORS_COLUMN).isNotNull())
        .orderBy(SOURCE_FILE_COLUMN, "_row_number")
        .limit(MAX_REPORTED_ROWS)
        .collect()
    )


def _fail_on_duplicate_keys(table: TableConfig, date: str, written: DataFrame) -> None:
    """Refuse an extract in which a key occurs more than once, listing examples.

    Resolving duplicates silently would pick an arbitrary version of the row. The stage is
    bucketed by ``keyhash``, so this aggregation needs no shuffle.
    """
    repeated = written.groupBy("keyhash").count().where(F.col("count") > 1)
    repeated_count = repeated.count()
    if repeated_count == 0:
        return
    key_names = [c.name for c in table.key_columns]
    examples = (
        written.join(repeated.limit(MAX_REPORTED_ROWS), "keyhash")
        .groupBy(*key_names, "count")
        .agg(F.array_sort(F.collect_set(SOURCE_FILE_COLUMN)).alias("files"))
        .orderBy(*key_names)
        .collect()
    )
    lines = []
    for row in examples:
        key_text = ", ".join(f"{name}={row[name]!r}" for name in key_names)
        lines.append(f"  - {key_text}: {row['count']} rows (in {', '.join(row['files'])})")
    raise InputDataError(
        f"table '{table.name}', business date {date}: {repeated_count} key(s) occur more "
        "than once in the extract; nothing was written to the state or history.\n"
        + "\n".join(lines)
        + "\nDeliver an extract with one row per key and re-run the date."
    )


def validate_stage(dbt: Any, spark: SparkSession, written: DataFrame) -> None:
    """Fail the stage with a clear message when any row of the written stage has errors.

    Parameters
    ----------
    dbt : Any
        dbt's Python model object (gives the table config and business date).
    spark : SparkSession
        The active session.
    written : DataFrame
        The stage table as written.

    Raises
    ------
    InputDataError
        Naming the table, the file, the row and column of each reported problem.

    """
    table = TableConfig.from_dict(dbt.config.meta_get("hashcdc_table"))
    date = parse_business_date(dbt.config.meta_get("business_date"))
    bad_count = written.where(F.col(ROW_ERRORS_COLUMN).isNotNull()).count()
    if bad_count == 0:
        _fail_on_duplicate_keys(table, date, written)
        return
    files = _input_files(spark, resolve_source_path(table, date))
    header_lines = 1 if table.source.format == "csv" and table.source.csv["header"] else 0
    lines = []
    for row in _failing_rows(spark, table, files):
        where = f"{row[SOURCE_FILE_COLUMN]} row {row['_row_number']}"
        if table.source.format == "csv":
            where += f" (line {row['_row_number'] + header_lines})"
        lines.append(f"  - {where}: {'; '.join(row[ROW_ERRORS_COLUMN])}")
    raise InputDataError(
        f"table '{table.name}', business date {date}: {bad_count} row(s) of the extract "
        "cannot be loaded; nothing was written to the state or history.\n"
        + "\n".join(lines)
        + f"\nFix the extract (or the column types in {table.config_file}) and re-run the date."
    )
