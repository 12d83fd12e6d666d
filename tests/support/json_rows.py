"""An extra input format, as a contributor adding one writes it: one Reader subclass.

One JSON object per line, a row each. The unit tier registers it and validates a config
in it; the functional tier runs it end to end (the ``json_rows`` fixture registers it).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from hashcdc.config import TableConfig
from hashcdc.pipeline.columns import BLOCK_START, CORRUPT_RECORD, LINE_COLUMN, ROW_ID, SOURCE_FILE
from hashcdc.pipeline.extract import read_event_lines
from hashcdc.pipeline.inputs.base import Reader


class JsonRowsReader(Reader):
    """One JSON object per line, a row each; fields by name (any of a column's names)."""

    name: ClassVar[str] = "json_rows"
    description: ClassVar[str] = "one JSON object per line, a row each"
    malformed_row: ClassVar[str] = "malformed row: not a JSON object"

    def read_rows(self, spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
        lines = read_event_lines(spark, table, files).where(F.trim(LINE_COLUMN) != "")
        parsed = lines.select("*", F.try_parse_json(LINE_COLUMN).alias("_parsed"))

        def field(sources: tuple[str, ...]) -> Any:
            paths = [f"$['{name}']" for name in sources]
            return F.coalesce(*[F.try_variant_get("_parsed", path, "string") for path in paths])

        return parsed.select(
            *[field(sources).alias(name) for sources, name in table.source_fields],
            F.when(F.col("_parsed").isNull(), F.col(LINE_COLUMN)).alias(CORRUPT_RECORD),
            SOURCE_FILE,
            BLOCK_START,
            ROW_ID,
        )


CONFIG = {
    "name": "json_rows_table",
    "extract_type": "full",
    "max_reject_fraction": 0.5,
    "source": {"path": "landing/json_rows_table/{business_date}.jsonl", "format": "json_rows"},
    "columns": [
        {"name": "id", "type": "int", "key": True},
        {"name": "amount", "type": "decimal(8,2)"},
    ],
}
