"""A table's extract for a business date: where it lands, its files, whether they are text.

How the files become rows is their format's reader's work (:mod:`hashcdc.pipeline.inputs`): every
value is read as text (casting is :mod:`hashcdc.pipeline.casting`'s work), and each row keeps where
it came from (file, split, an id growing within the split: :func:`position_columns`),
from which line numbers are derived for rejected rows only. Files are listed through
Hadoop's FileSystem API (:mod:`hashcdc.runtime.hadoop`), so extracts may land on any Hadoop URI.
"""

from __future__ import annotations

import os

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.errors import InputDataError
from hashcdc.pipeline import kafka
from hashcdc.pipeline.columns import BLOCK_START, ROW_ID, SOURCE_FILE
from hashcdc.runtime.hadoop import HadoopFiles, resolve_location

# The column that holds each line of a JSON event feed.
LINE_COLUMN = "_line"
# How much of each text file the driver looks at to tell text from a compressed or binary
# file.
SNIFF_BYTES = 8192
# Leading bytes of the compressed and archive formats an extract arrives in by mistake,
# and how Spark can read each (it decompresses by file extension).
_COMPRESSED_SIGNATURES = {
    b"\x1f\x8b": ("gzip", "name it with .gz at the end (Spark decompresses .gz files)"),
    b"BZh": ("bzip2", "name it with .bz2 at the end (Spark decompresses .bz2 files)"),
    b"\x28\xb5\x2f\xfd": ("zstd", "name it with .zst at the end (Spark decompresses .zst files)"),
    b"\x04\x22\x4d\x18": ("lz4", "decompress it first (Spark reads Hadoop's .lz4 framing only)"),
    b"\xfd7zXZ\x00": ("xz", "decompress it first (Spark does not read xz)"),
    b"PK\x03\x04": ("zip archive", "unzip it first (Spark does not read zip archives)"),
    b"PAR1": ("parquet", "set source.format: parquet, or deliver the csv"),
}
# Encodings whose text never holds a NUL byte (UTF-16 and UTF-32 do).
_NUL_FREE_ENCODINGS = ("utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin1", "cp1252")


def resolve_source_path(table: TableConfig, business_date: str) -> str:
    """The extract's path for a date; relative paths are taken from the project folder."""
    project_dir = os.environ.get("DBT_PROJECT_DIR") or os.getcwd()
    return resolve_location(table.source.path_for(business_date), project_dir)


def extract_files(spark: SparkSession, table: TableConfig, business_date: str) -> list[str]:
    """The data files of a table's extract for a date.

    Raises
    ------
    InputDataError
        When there are none: naming the expected path and the config field that sets it.

    """
    if table.source.kafka is not None:
        kafka.check_reachable(table)
        return [kafka.topic_location(table, business_date)]
    path = resolve_source_path(table, business_date)
    files = HadoopFiles.of(spark).data_files(path)
    if not files:
        raise InputDataError(
            f"table '{table.name}': no extract for business date {business_date}: expected "
            f"{table.source.format} data at {path} (source.path in {table.config_file}). "
            "Nothing was written; deliver the extract and re-run the date."
        )
    return files


def not_text_problem(head: bytes, encoding: str) -> str | None:
    """Why a file's first bytes are not text in ``encoding`` (None when they may be).

    A compressed file under a plain name, an archive or parquet say how to make them
    readable; NUL bytes in an encoding that has none mean a binary file. Invalid byte
    sequences alone are not judged here: the rows that hold them are rejected one by one.
    """
    for signature, (kind, remedy) in _COMPRESSED_SIGNATURES.items():
        if head.startswith(signature):
            return f"is a {kind} file, not {encoding} text: {remedy}"
    if encoding.lower().replace("_", "-") in _NUL_FREE_ENCODINGS and b"\x00" in head:
        return f"is not {encoding} text (it holds NUL bytes: a binary file?)"
    return None


def refuse_files_not_text(
    spark: SparkSession, table: TableConfig, files: list[str], business_date: str, encoding: str
) -> None:
    """Refuse a text extract (csv, JSON events) any of whose files is not text in ``encoding``.

    Raises
    ------
    InputDataError
        One line: the table, the date, the file and what would make it readable.

    """
    hadoop = HadoopFiles.of(spark)
    for file in files:
        if kafka.is_topic(file):  # a topic's values are read as text, each on its own
            continue
        problem = not_text_problem(hadoop.head(file, SNIFF_BYTES), encoding)
        if problem:
            raise InputDataError(
                f"table '{table.name}', business date {business_date}: {file} {problem}; "
                "nothing was written."
            )


def position_columns() -> list[Column]:
    """Where each row of a text file sits, cheaply: its file, its split, an id in the split.

    Line numbers are derived from them only for rejected rows.
    """
    return [
        F.col("_metadata.file_path").alias(SOURCE_FILE),
        F.col("_metadata.file_block_start").alias(BLOCK_START),
        F.monotonically_increasing_id().alias(ROW_ID),
    ]


def read_event_lines(spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
    """JSON events as lines of text, with where each line sits (file, split, id).

    From files, or from a topic's date (:mod:`hashcdc.pipeline.kafka`).
    """
    if files and kafka.is_topic(files[0]):
        return kafka.read_topic_lines(spark, table, files[0], LINE_COLUMN)
    return spark.read.text(files).select(F.col("value").alias(LINE_COLUMN), *position_columns())
