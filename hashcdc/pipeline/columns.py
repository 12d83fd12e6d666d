"""hashcdc's own columns: the names, types and order of the stage's and the rejects' columns.

The one home of these facts: the stage (:mod:`hashcdc.pipeline.stage`,
:mod:`hashcdc.pipeline.feed`), the rejects (:mod:`hashcdc.pipeline.rejects`), the checks
and the generator (which documents them) all take them from here. Their descriptions live
once, as dbt doc blocks in ``macros/docs/hashcdc_columns.md``, named by :func:`doc_name`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

KEYHASH = "keyhash"
NONKEYHASH = "nonkeyhash"
# The hash of a row's sensitive columns: in the stage and the sensitive tables only.
SENSITIVE_HASH = "sensitive_hash"
BUSINESS_DATE = "business_date"
SOURCE_FILE = "_source_file"
ROW_ERRORS = "_row_errors"
CORRUPT_RECORD = "_corrupt_record"
RAW_VALUES = "_raw_values"
RAW_LINE = "_raw_line"
BLOCK_START = "_block_start"
ROW_ID = "_row_id"
# The column that holds each line of a JSON event feed.
LINE_COLUMN = "_line"
# An event's source commit time in epoch milliseconds, as its raw events carry it:
# Debezium's source.ts_ms (else the connector's ts_ms); __source_ts_ms (else __ts_ms) in
# the flat form. csv and parquet feeds carry none.
EVENT_TIME_RAW = "_event_ms"
# Kept in the stage for rejected rows only (null otherwise): where the row came from.
REJECT_DETAIL_COLUMNS = (RAW_VALUES, RAW_LINE, BLOCK_START, ROW_ID)


@dataclass(frozen=True)
class OwnColumn:
    """One of hashcdc's own columns: its name and Spark type."""

    name: str
    spark_type: DataType

    @property
    def data_type(self) -> str:
        """The type as dbt docs show it (``array<string>``, ``bigint``, ``struct``, …)."""
        if isinstance(self.spark_type, StructType) and not self.spark_type.fields:
            return "struct"  # fields of the table's own choosing (event_sequence)
        return self.spark_type.simpleString()


def doc_name(column: str, model: str = "") -> str:
    """The dbt doc block describing one of hashcdc's own columns (of one kind of model)."""
    prefix = f"hashcdc_{model}_" if model else "hashcdc_"
    return prefix + column.lstrip("_")


HASH_COLUMNS = (OwnColumn(KEYHASH, BinaryType()), OwnColumn(NONKEYHASH, BinaryType()))
SENSITIVE_HASH_COLUMN = OwnColumn(SENSITIVE_HASH, BinaryType())
# The stage columns of a change feed besides those of an extract (see hashcdc.pipeline.feed).
EVENT_STAGE_COLUMNS = (
    OwnColumn("before_keyhash", BinaryType()),
    OwnColumn("event_op", StringType()),
    OwnColumn("event_sequence", StructType()),
    OwnColumn("event_id", BinaryType()),
    OwnColumn("is_new_event", BooleanType()),
    OwnColumn("event_time", TimestampType()),
    OwnColumn("event_partition", IntegerType()),
)
# Their names, in the stage's order (see hashcdc.pipeline.feed).
EVENT_COLUMNS = tuple(column.name for column in EVENT_STAGE_COLUMNS)
# The stage's columns after the configured ones, the hashes and (feeds) the event columns.
STAGE_TRAILING_COLUMNS = (
    OwnColumn(BUSINESS_DATE, DateType()),
    OwnColumn(SOURCE_FILE, StringType()),
    OwnColumn(ROW_ERRORS, ArrayType(StringType())),
    OwnColumn(RAW_VALUES, MapType(StringType(), StringType())),
    OwnColumn(RAW_LINE, StringType()),
    OwnColumn(BLOCK_START, LongType()),
    OwnColumn(ROW_ID, LongType()),
)
# hashcdc's columns of a state after the configured ones, as cdc_state's final select writes
# them, and of a history, as history_changes' (a group that takes over a table's own tables
# writes them: hashcdc.pipeline.evolution.joining; a member's history view keeps them).
STATE_OWN_COLUMNS = (
    KEYHASH,
    NONKEYHASH,
    "operation",
    "eff_start_date",
    "seen_date",
    BUSINESS_DATE,
    "operation_counts",
)
HISTORY_OWN_COLUMNS = (KEYHASH, NONKEYHASH, "operation", "eff_start_date", BUSINESS_DATE)
REJECTS_COLUMNS = (
    OwnColumn("source_file", StringType()),
    OwnColumn("row_number", LongType()),
    OwnColumn("line_number", LongType()),
    OwnColumn("reasons", ArrayType(StringType())),
    OwnColumn("raw_values", MapType(StringType(), StringType())),
    OwnColumn("raw_line", StringType()),
    OwnColumn(KEYHASH, BinaryType()),
    OwnColumn(BUSINESS_DATE, DateType()),
)
REJECTS_SCHEMA = StructType([StructField(c.name, c.spark_type, True) for c in REJECTS_COLUMNS])
