"""A change feed read from a Kafka topic (``source.kafka``) through Spark's Kafka source.

A business date's events are those whose source commit time falls in the date (UTC, as
``hashcdc capture`` lands them). The read starts at the first record whose Kafka timestamp
is at or after the date's start, less ``clock_skew_seconds`` (a record is produced after
its commit, so a later date's records are never needed to find a date's events), and goes
to the topic's end; events committed after the date are left for the next one. Events of
earlier dates in the window (late records) are kept: the stage recognises those the state
has applied by its sequence watermark, as for files read again, so each event is applied
once and no offsets need keeping. Tombstones (null values) carry nothing to apply.

In the rest of the pipeline a topic's date is one location, ``kafka://<topic>/<date>``; a
row's file is ``kafka://<topic>/<partition>`` and its row id the record's offset.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.pipeline.columns import BLOCK_START, ROW_ID, SOURCE_FILE

SCHEME = "kafka://"


def topic_location(table: TableConfig, business_date: str) -> str:
    """The one location of a topic's business date."""
    assert table.source.kafka is not None
    return f"{SCHEME}{table.source.kafka.topic}/{business_date}"


def is_topic(location: str) -> bool:
    """Whether a location is a topic's date (not a file)."""
    return location.startswith(SCHEME)


def _date_of(location: str) -> str:
    return location.rsplit("/", 1)[1]


def _epoch_ms(day: dt.date) -> int:
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)
    return int(start.timestamp() * 1000)


def date_window(table: TableConfig, location: str) -> tuple[int, int]:
    """The Kafka timestamp to start reading at and the commit time the date ends before (ms)."""
    assert table.source.kafka is not None
    day = dt.date.fromisoformat(_date_of(location))
    start = _epoch_ms(day) - table.source.kafka.clock_skew_seconds * 1000
    return start, _epoch_ms(day + dt.timedelta(days=1))


def read_topic_lines(
    spark: SparkSession, table: TableConfig, location: str, line_column: str
) -> DataFrame:
    """A topic's records of a date's window as lines of text, with partition and offset."""
    kafka = table.source.kafka
    assert kafka is not None
    start, _ = date_window(table, location)
    records = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", kafka.topic)
        .option("startingTimestamp", str(start))
        # No record at or after the start: nothing to read (not an error).
        .option("startingOffsetsByTimestampStrategy", "latest")
        .option("endingOffsets", "latest")
        .options(**{f"kafka.{name}": value for name, value in kafka.options.items()})
        .load()
    )
    return records.where(F.col("value").isNotNull()).select(
        F.col("value").cast("string").alias(line_column),
        F.concat(F.lit(f"{SCHEME}{kafka.topic}/"), F.col("partition").cast("string")).alias(
            SOURCE_FILE
        ),
        F.lit(0).cast("bigint").alias(BLOCK_START),
        F.col("offset").alias(ROW_ID),
    )


def in_date(table: TableConfig, location: str, commit_ms: Column) -> Column:
    """Whether an event belongs to the date read (or an earlier one): committed before its end."""
    _, end = date_window(table, location)
    return commit_ms.isNull() | (commit_ms.cast("bigint") < F.lit(end))
