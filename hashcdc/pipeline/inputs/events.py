"""The shape of raw change events: what every feed's reader hands :mod:`hashcdc.pipeline.feed`.

One row per event, every value still text: the row image's columns (named as in the lake),
the key's before image (``__before_<key>``), the operation as written (``_op_raw``), each
sequence field (``_seq_<alias>``), the source's commit time in epoch milliseconds
(``_event_ms``), the logical type and scale an event's own schema gives a field
(``_logical_<column>``, ``_scale_<column>``), whether the line is a tombstone, the raw
line (``_line``) and where it sits (file, split, row id).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.pipeline.columns import (
    BLOCK_START,
    CORRUPT_RECORD,
    EVENT_TIME_RAW,
    LINE_COLUMN,
    ROW_ID,
    SOURCE_FILE,
)

BEFORE_PREFIX = "__before_"
OPERATION_RAW_COLUMN = "_op_raw"
SEQUENCE_PREFIX = "_seq_"
# The logical type (and decimal scale) the event's own schema gives a field, when it has one.
LOGICAL_PREFIX = "_logical_"
SCALE_PREFIX = "_scale_"
TOMBSTONE_COLUMN = "_is_tombstone"


def raw_table_events(frame: DataFrame, table: TableConfig) -> DataFrame:
    """A csv/parquet feed's events (already read as text) in the raw events' shape."""
    assert table.changes is not None and table.changes.operation_column is not None
    return frame.select(
        *[F.col(c.name) for c in table.columns],
        *[F.lit(None).cast("string").alias(BEFORE_PREFIX + c.name) for c in table.key_columns],
        F.col(table.changes.operation_column).alias(OPERATION_RAW_COLUMN),
        *[F.col(f.field).alias(SEQUENCE_PREFIX + f.alias) for f in table.changes.sequence_by],
        F.lit(None).cast("string").alias(EVENT_TIME_RAW),
        CORRUPT_RECORD,
        F.lit(False).alias(TOMBSTONE_COLUMN),
        F.col(CORRUPT_RECORD).alias(LINE_COLUMN),
        SOURCE_FILE,
        BLOCK_START,
        ROW_ID,
    )
