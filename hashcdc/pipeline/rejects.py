"""The rows of an extract that were not loaded, kept per business date in ``<table>_rejects``.

Called by the generated dbt Python model ``<table>_rejects`` (and by :mod:`hashcdc.pipeline.checks`
for the examples of a refused date): file, row and line number, reasons, the values as read.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias
from pyspark.sql.types import StructType

from hashcdc.config import TableConfig
from hashcdc.dates import parse_business_date
from hashcdc.pipeline.casting import SENSITIVE_LINE_MASK
from hashcdc.pipeline.columns import (
    BLOCK_START,
    RAW_LINE,
    RAW_VALUES,
    REJECTS_SCHEMA,
    ROW_ERRORS,
    ROW_ID,
    SOURCE_FILE,
)
from hashcdc.pipeline.extract import extract_files
from hashcdc.pipeline.inputs import table_reader
from hashcdc.pipeline.transports import transport_of


def no_rows(spark: SparkSession, schema: StructType) -> DataFrame:
    """No rows, as a plan Spark knows to be empty (a local relation): no job reads it.

    The date's write then commits nothing when its table holds none of the date
    (``hashcdc.replace_date``, :func:`hashcdc.pipeline.session_stage.known_empty`). A
    DataFrame made of an empty list is an RDD of empty partitions instead, which every
    read runs a job for.
    """
    return spark.createDataFrame([], schema).limit(0)


def with_row_numbers(
    spark: SparkSession, table: TableConfig, date: str, rejected: DataFrame
) -> DataFrame:
    """Add ``_row_number`` (1-based, within its file) and ``_line_number`` to rejected rows.

    A CSV row's number is the rows in earlier splits of its file plus its position in its
    own split. The counts per split come from re-reading the date's files exactly as the
    stage did (same files, same options, the columns of the date: same splits and row ids);
    it reads no column, and it only happens when rows were rejected.
    """
    reader = table_reader(table)
    numbered = transport_of(table).record_number()  # a topic's: a record's offset
    if numbered is not None:
        return rejected.select(
            "*",
            numbered.alias("_row_number"),
            F.lit(None).cast("bigint").alias("_line_number"),
        )
    if reader.row_id_is_file_row:
        return rejected.select(
            "*",
            (F.col(ROW_ID) + 1).alias("_row_number"),
            F.lit(None).cast("bigint").alias("_line_number"),
        )
    files = extract_files(spark, table, date)
    splits = (
        reader.read_rows(spark, table.as_read_on(date), files)
        .groupBy(SOURCE_FILE, BLOCK_START)
        .agg(F.min(ROW_ID).alias("_first_row_id"), F.count(F.lit(1)).alias("_rows"))
    )
    earlier = Window.partitionBy(SOURCE_FILE).orderBy(BLOCK_START)
    offsets = splits.select(
        SOURCE_FILE,
        BLOCK_START,
        "_first_row_id",
        (F.sum("_rows").over(earlier) - F.col("_rows")).alias("_rows_before"),
    )
    row_number = F.col("_rows_before") + F.col(ROW_ID) - F.col("_first_row_id") + 1
    # A row that may span lines (quoted line breaks) has an exact row number only.
    line_number = (
        F.lit(None).cast("bigint")
        if reader.rows_span_lines(table)
        else row_number + reader.header_lines(table)
    )
    return rejected.join(F.broadcast(offsets), [SOURCE_FILE, BLOCK_START]).select(
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
        The stage ``stg_<table>`` of the date, as kept in the session.
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
    rejected = stage.where(F.col(ROW_ERRORS).isNotNull())
    if rejected.isEmpty():
        return no_rows(spark, REJECTS_SCHEMA)
    numbered = with_row_numbers(spark, table, date, rejected)
    # A malformed line may hold sensitive values in any field: its file and line number say
    # where to look.
    raw_line = F.col(RAW_LINE)
    if table.sensitive_columns:
        raw_line = F.when(raw_line.isNotNull(), F.lit(SENSITIVE_LINE_MASK))
    return numbered.select(
        F.col(SOURCE_FILE).alias("source_file"),
        F.col("_row_number").alias("row_number"),
        F.col("_line_number").alias("line_number"),
        F.col(ROW_ERRORS).alias("reasons"),
        F.col(RAW_VALUES).alias("raw_values"),
        raw_line.alias("raw_line"),
        "keyhash",
        F.lit(date).cast("date").alias("business_date"),
    )
