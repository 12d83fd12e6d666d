"""Parquet extracts (``source.format: parquet``): columns taken by name, read as text."""

from __future__ import annotations

from typing import ClassVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.column_types import normalize_type
from hashcdc.config import TableConfig
from hashcdc.pipeline.columns import BLOCK_START, CORRUPT_RECORD, ROW_ID, SOURCE_FILE
from hashcdc.pipeline.header import (
    expected_fields,
    header_differences,
    refuse_other_columns,
    unexpected_columns,
)
from hashcdc.pipeline.inputs.base import Reader


class ParquetReader(Reader):
    """Parquet files: columns by name (any order), every value cast to text on reading."""

    name: ClassVar[str] = "parquet"
    description: ClassVar[str] = "parquet files"
    is_text: ClassVar[bool] = False
    row_id_is_file_row: ClassVar[bool] = True

    def check_columns(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        business_date: str,
        sampled: list[str] | None = None,
        heads: dict[str, bytes] | None = None,
    ) -> None:
        """Refuse files without a configured column, or with columns the config lacks."""
        del sampled, heads  # the check reads the files' own columns, not a sample or text
        read = table.as_read_on(business_date)
        expected = expected_fields(read)
        frame = spark.read.parquet(*files)
        actual = [name.lower() for name in frame.columns]
        differences = [d for d in header_differences(expected, actual) if "order" not in d]
        reports = [f"  - {files[0]}: {'; '.join(differences)}"] if differences else []
        types = {f.name.lower(): f.dataType.simpleString() for f in frame.schema.fields}
        new_columns = {
            name: normalize_type(types[name]) or "string"
            for name in unexpected_columns(expected, actual)
        }
        refuse_other_columns(read, business_date, reports, new_columns)

    def read_rows(self, spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
        """Each configured column by any of its names (case-insensitive), as text."""
        frame = spark.read.parquet(*files)
        present = {name.lower() for name in frame.columns}
        selected = [
            F.col(next((s for s in sources if s.lower() in present), sources[0]))
            .cast("string")
            .alias(name)
            for sources, name in table.source_fields
        ]
        return frame.select(
            *selected,
            F.lit(None).cast("string").alias(CORRUPT_RECORD),
            F.col("_metadata.file_path").alias(SOURCE_FILE),
            F.lit(0).cast("bigint").alias(BLOCK_START),
            F.col("_metadata.row_index").alias(ROW_ID),
        )
