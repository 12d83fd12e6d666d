"""The typecast-and-hash stage: one pass over a table's extract for one business date.

Called by the generated dbt Python model ``stg_<table>``. The stage checks the extract's
header against the config (:mod:`hashcdc.header`), reads the extract with every column as
text, casts each configured column to its type with ``try_cast`` (so a bad value never
raises mid-job), records per row why it cannot be loaded (``_row_errors``; with
``duplicates_keep_last_by`` also superseded duplicates), and computes ``keyhash`` and
``nonkeyhash`` (see :mod:`hashcdc.hashing`). All per-row work is native Spark; nothing
runs in Python per row.

After dbt has written the stage table, :func:`validate_stage` counts the rejected rows:
above the table's limits it raises :class:`~hashcdc.errors.InputDataError` naming table,
file, row, line and column, so the state and history models never run and the previous
state is untouched; it also refuses keys that occur twice among the loaded rows. The
generated ``<table>_rejects`` model keeps the rejected rows (:func:`rejected_rows`).
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DateType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from hashcdc.casting import (
    column_failed,
    column_message,
    stage_typed,
    typed_value,
    values_map,
)
from hashcdc.config import EVENT_FORMATS, TableConfig
from hashcdc.errors import HashcdcError, InputDataError
from hashcdc.feed import (
    PriorSnapshot,
    fail_on_conflicting_events,
    raw_events,
    raw_table_events,
    read_event_lines,
    report_skipped_events,
    typed_events,
)
from hashcdc.hashing import with_row_hashes
from hashcdc.header import check_header

SOURCE_FILE_COLUMN = "_source_file"
ROW_ERRORS_COLUMN = "_row_errors"
CORRUPT_RECORD_COLUMN = "_corrupt_record"
RAW_VALUES_COLUMN = "_raw_values"
RAW_LINE_COLUMN = "_raw_line"
BLOCK_START_COLUMN = "_block_start"
ROW_ID_COLUMN = "_row_id"
# Kept in the stage for rejected rows only (null otherwise): where the row came from.
REJECT_DETAIL_COLUMNS = (RAW_VALUES_COLUMN, RAW_LINE_COLUMN, BLOCK_START_COLUMN, ROW_ID_COLUMN)
# The stage columns of a change feed besides those of an extract (see hashcdc.feed).
EVENT_COLUMNS = ("before_keyhash", "event_op", "event_sequence", "event_id", "is_new_event")
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


def _raw_reader(spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
    """The extract with every source column as text, plus where each row sits.

    JSON event feeds are read as lines (:func:`hashcdc.feed.read_event_lines`).
    """
    if table.source.format in EVENT_FORMATS:
        return read_event_lines(spark, files)
    fields = table.source_fields
    if table.source.format == "parquet":
        frame = spark.read.parquet(*files)
        selected = [F.col(source).cast("string").alias(name) for source, name in fields]
        return frame.select(
            *selected,
            F.lit(None).cast("string").alias(CORRUPT_RECORD_COLUMN),
            F.col("_metadata.file_path").alias(SOURCE_FILE_COLUMN),
            F.lit(0).cast("bigint").alias(BLOCK_START_COLUMN),
            F.col("_metadata.row_index").alias(ROW_ID_COLUMN),
        )
    options = table.source.csv
    # Columns are taken by position (the header was checked), named as in the lake.
    schema = StructType(
        [StructField(name, StringType(), True) for _, name in fields]
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
    # Where each row sits, cheaply: the split it was read from and an id that grows
    # within the split. Line numbers are derived from them only for rejected rows.
    return frame.select(
        "*",
        F.col("_metadata.file_path").alias(SOURCE_FILE_COLUMN),
        F.col("_metadata.file_block_start").alias(BLOCK_START_COLUMN),
        F.monotonically_increasing_id().alias(ROW_ID_COLUMN),
    )


def _typed_with_errors(raw: DataFrame, table: TableConfig) -> DataFrame:
    staged, typed = stage_typed(raw, {c.name: typed_value(F.col(c.name), c) for c in table.columns})
    is_malformed = F.col(CORRUPT_RECORD_COLUMN).isNotNull()
    has_errors = is_malformed
    for column in table.columns:
        has_errors = has_errors | column_failed(F.col(column.name), typed[column.name], column)
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
            *[column_message(F.col(c.name), typed[c.name], c) for c in table.columns],
        )
    )
    return staged.select(
        *[typed[c.name].alias(c.name) for c in table.columns],
        F.when(has_errors, messages).alias(ROW_ERRORS_COLUMN),
        F.when(has_errors, values_map(table)).alias(RAW_VALUES_COLUMN),
        F.col(CORRUPT_RECORD_COLUMN).alias(RAW_LINE_COLUMN),
        F.col(SOURCE_FILE_COLUMN),
        F.col(BLOCK_START_COLUMN),
        F.col(ROW_ID_COLUMN),
    )


def _mark_superseded_duplicates(frame: DataFrame, table: TableConfig) -> DataFrame:
    """Reject all but the last row of each key, by ``duplicates_keep_last_by``.

    Rows that share the latest value cannot be told apart: all of them are rejected, so
    the key keeps its previous state rather than an arbitrary one of them.
    """
    order_by = F.col(str(table.duplicates_keep_last_by))
    accepted = F.col(ROW_ERRORS_COLUMN).isNull()
    per_key = Window.partitionBy("keyhash", accepted)
    latest = frame.withColumn("__latest", F.max(order_by).over(per_key))
    is_latest = order_by.eqNullSafe(F.col("__latest"))
    counted = latest.withColumn("__rows", F.count(F.lit(1)).over(per_key)).withColumn(
        "__latest_rows", F.sum(F.when(is_latest, 1).otherwise(0)).over(per_key)
    )
    name = table.duplicates_keep_last_by
    reason = F.when(~is_latest, F.lit(f"duplicate key: a row with a later '{name}' wins")).when(
        F.col("__latest_rows") > 1,
        F.lit(f"duplicate key: several rows share the latest '{name}'; none is taken"),
    )
    superseded = accepted & (F.col("__rows") > 1) & reason.isNotNull()
    return counted.select(
        *[c for c in frame.columns if c not in (ROW_ERRORS_COLUMN, RAW_VALUES_COLUMN)],
        F.when(superseded, F.array(reason))
        .otherwise(F.col(ROW_ERRORS_COLUMN))
        .alias(ROW_ERRORS_COLUMN),
        F.when(superseded, values_map(table))
        .otherwise(F.col(RAW_VALUES_COLUMN))
        .alias(RAW_VALUES_COLUMN),
    )


def state_table(schema: str | None, table: TableConfig) -> str | None:
    """The qualified name of a table's state model (None when the schema is unknown)."""
    return f"{schema}.{table.name}_state" if schema else None


def typecast_and_hash(
    spark: SparkSession, table_data: dict[str, Any], business_date: Any, schema: str | None = None
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
    schema : str, optional
        The schema of the table's models: a change feed reads its previous state there.

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
    if table.is_feed:
        prior = PriorSnapshot.read(spark, state_table(schema, table), date)
        return _stage_columns(_event_stage(spark, table, files, prior), table, date)
    check_header(spark, table, files)
    typed = _typed_with_errors(_raw_reader(spark, table, files), table)
    hashed = with_row_hashes(typed, list(table.key_columns), list(table.compared_columns))
    if table.duplicates_keep_last_by:
        hashed = _mark_superseded_duplicates(hashed, table)
    return _stage_columns(hashed, table, date)


def _event_stage(
    spark: SparkSession, table: TableConfig, files: list[str], prior: PriorSnapshot
) -> DataFrame:
    """The events of a change feed, cast and hashed: one row per event (:mod:`hashcdc.feed`)."""
    if table.source.format in EVENT_FORMATS:
        raw = raw_events(spark, table, files)
    else:
        check_header(spark, table, files)
        raw = raw_table_events(_raw_reader(spark, table, files), table)
    return typed_events(raw, table, values_map(table), prior)


def _stage_columns(hashed: DataFrame, table: TableConfig, date: str) -> DataFrame:
    """The stage's columns in order; the reject details are kept for rejected rows only."""
    rejected = F.col(ROW_ERRORS_COLUMN).isNotNull()
    return hashed.select(
        *[F.col(c.name) for c in table.columns],
        "keyhash",
        "nonkeyhash",
        *(EVENT_COLUMNS if table.is_feed else ()),
        F.lit(date).cast("date").alias("business_date"),
        F.col(SOURCE_FILE_COLUMN),
        F.col(ROW_ERRORS_COLUMN),
        *[F.when(rejected, F.col(name)).alias(name) for name in REJECT_DETAIL_COLUMNS],
    )


REJECTS_SCHEMA = StructType(
    [
        StructField("source_file", StringType(), True),
        StructField("row_number", LongType(), True),
        StructField("line_number", LongType(), True),
        StructField("reasons", ArrayType(StringType()), True),
        StructField("raw_values", MapType(StringType(), StringType()), True),
        StructField("raw_line", StringType(), True),
        StructField("keyhash", BinaryType(), True),
        StructField("business_date", DateType(), True),
    ]
)


def _with_row_numbers(
    spark: SparkSession, table: TableConfig, date: str, rejected: DataFrame
) -> DataFrame:
    """Add ``_row_number`` (1-based, within its file) and ``_line_number`` to rejected rows.

    A CSV row's number is the rows in earlier splits of its file plus its position in its
    own split. The counts per split come from re-reading the date's files exactly as the
    stage did (same files, same options: same splits and row ids); it reads no column, and
    it only happens when rows were rejected.
    """
    if table.source.format == "parquet":
        return rejected.select(
            "*",
            (F.col(ROW_ID_COLUMN) + 1).alias("_row_number"),
            F.lit(None).cast("bigint").alias("_line_number"),
        )
    files = _input_files(spark, resolve_source_path(table, date))
    splits = (
        _raw_reader(spark, table, files)
        .groupBy(SOURCE_FILE_COLUMN, BLOCK_START_COLUMN)
        .agg(F.min(ROW_ID_COLUMN).alias("_first_row_id"), F.count(F.lit(1)).alias("_rows"))
    )
    earlier = Window.partitionBy(SOURCE_FILE_COLUMN).orderBy(BLOCK_START_COLUMN)
    offsets = splits.select(
        SOURCE_FILE_COLUMN,
        BLOCK_START_COLUMN,
        "_first_row_id",
        (F.sum("_rows").over(earlier) - F.col("_rows")).alias("_rows_before"),
    )
    row_number = F.col("_rows_before") + F.col(ROW_ID_COLUMN) - F.col("_first_row_id") + 1
    header_lines = 1 if table.source.csv["header"] and table.source.format == "csv" else 0
    # Quoted line breaks make a row span lines: then only the row number is exact.
    line_number = (
        F.lit(None).cast("bigint")
        if table.source.csv.get("multiline")
        else row_number + header_lines
    )
    return rejected.join(F.broadcast(offsets), [SOURCE_FILE_COLUMN, BLOCK_START_COLUMN]).select(
        *rejected.columns,
        row_number.alias("_row_number"),
        line_number.alias("_line_number"),
    )


def rejected_rows(
    spark: SparkSession, stage: DataFrame, table_data: dict[str, Any], business_date: Any
) -> DataFrame:
    """The rows of a date's stage that were not loaded, for ``<table>_rejects``.

    Parameters
    ----------
    spark : SparkSession
        The active session.
    stage : DataFrame
        The stage table ``stg_<table>`` as written for the date.
    table_data : dict
        The table config as embedded by ``hashcdc generate``.
    business_date : str
        ``YYYY-MM-DD``.

    Returns
    -------
    DataFrame
        One row per rejected row (``REJECTS_SCHEMA``): file, row and line number, reasons,
        the raw values (or raw line for malformed rows) and the keyhash when it has one.

    """
    table = TableConfig.from_dict(table_data)
    date = parse_business_date(business_date)
    rejected = stage.where(F.col(ROW_ERRORS_COLUMN).isNotNull())
    if rejected.isEmpty():
        return spark.createDataFrame([], REJECTS_SCHEMA)
    numbered = _with_row_numbers(spark, table, date, rejected)
    return numbered.select(
        F.col(SOURCE_FILE_COLUMN).alias("source_file"),
        F.col("_row_number").alias("row_number"),
        F.col("_line_number").alias("line_number"),
        F.col(ROW_ERRORS_COLUMN).alias("reasons"),
        F.col(RAW_VALUES_COLUMN).alias("raw_values"),
        F.col(RAW_LINE_COLUMN).alias("raw_line"),
        "keyhash",
        F.lit(date).cast("date").alias("business_date"),
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
    counts = written.agg(
        F.count(F.lit(1)).alias("rows"), F.count(ROW_ERRORS_COLUMN).alias("rejected")
    ).first()
    total, rejected = int(counts["rows"]), int(counts["rejected"])
    if rejected:
        _check_reject_limits(spark, table, date, written, rejected, total)
    loaded = written.where(F.col(ROW_ERRORS_COLUMN).isNull())
    if table.is_feed:
        fail_on_conflicting_events(table, date, loaded)
        prior = PriorSnapshot.read(spark, state_table(dbt.this.schema, table), date)
        report_skipped_events(table, date, loaded, prior)
    elif not table.duplicates_keep_last_by:
        _fail_on_duplicate_keys(table, date, loaded)


def reject_limit_exceeded(table: TableConfig, rejected: int, total: int) -> str | None:
    """Which configured limit ``rejected`` of ``total`` rows exceeds, in words; or None."""
    if table.max_rejects is not None and rejected > table.max_rejects:
        return f"more than max_rejects ({table.max_rejects})"
    if rejected > total * table.max_reject_fraction:
        return f"more than max_reject_fraction ({table.max_reject_fraction:.1%} of the rows)"
    return None


def _check_reject_limits(
    spark: SparkSession,
    table: TableConfig,
    date: str,
    written: DataFrame,
    rejected: int,
    total: int,
) -> None:
    """Stop the run when the rejects exceed the table's limits; otherwise say how many."""
    exceeded = reject_limit_exceeded(table, rejected, total)
    if exceeded is None:
        print(
            f"hashcdc: table '{table.name}', business date {date}: {rejected} of {total} "
            f"row(s) rejected, kept in {table.name}_rejects; the rest is processed."
        )
        return
    examples = (
        _with_row_numbers(spark, table, date, written.where(F.col(ROW_ERRORS_COLUMN).isNotNull()))
        .orderBy(SOURCE_FILE_COLUMN, "_row_number")
        .limit(MAX_REPORTED_ROWS)
        .collect()
    )
    lines = []
    for row in examples:
        where = f"{row[SOURCE_FILE_COLUMN]} row {row['_row_number']}"
        if row["_line_number"] is not None:
            where += f" (line {row['_line_number']})"
        lines.append(f"  - {where}: {'; '.join(row[ROW_ERRORS_COLUMN])}")
    raise InputDataError(
        f"table '{table.name}', business date {date}: {rejected} row(s) of the extract "
        f"cannot be loaded ({rejected / max(total, 1):.1%} of {total}), {exceeded} in "
        f"{table.config_file}; nothing was written to the state or history.\n"
        + "\n".join(lines)
        + f"\nFix the extract (or the column types in {table.config_file}) and re-run the "
        "date; raise the limit only if these rows may be quarantined."
    )
