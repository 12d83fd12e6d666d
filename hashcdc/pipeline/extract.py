"""A table's extract for a business date: its locations, whether they are text, its lines.

Where an extract lands and how it is read from there is its transport's
(:mod:`hashcdc.pipeline.transports`: files in the landing zone, a Kafka topic); how its
rows are parsed is its format's reader's (:mod:`hashcdc.pipeline.inputs`): every value is
read as text (casting is :mod:`hashcdc.pipeline.casting`'s work), and each row keeps where
it came from (file, split, an id growing within the split), from which line numbers are
derived for rejected rows only.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from hashcdc.config import TableConfig
from hashcdc.errors import InputDataError
from hashcdc.pipeline.transports import transport_of
from hashcdc.runtime.hadoop import HadoopFiles

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


def extract_files(spark: SparkSession, table: TableConfig, business_date: str) -> list[str]:
    """The locations of a table's extract for a date (its transport's).

    Raises
    ------
    InputDataError
        When there are none: naming the expected place and the config field that sets it.

    """
    return transport_of(table).locations(spark, table, business_date)


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
) -> dict[str, bytes]:
    """Refuse a text extract (csv, JSON events) any of whose files is not text in ``encoding``.

    Returns the first bytes read of each file (none for a topic), for a check that reads
    the first line.

    Raises
    ------
    InputDataError
        One line: the table, the date, the file and what would make it readable.

    """
    if not transport_of(table).sniffs_bytes:  # a topic's values are read as text, each alone
        return {}
    hadoop = HadoopFiles.of(spark)
    heads = {}
    for file in files:
        heads[file] = hadoop.head(file, SNIFF_BYTES)
        problem = not_text_problem(heads[file], encoding)
        if problem:
            raise InputDataError(
                f"table '{table.name}', business date {business_date}: {file} {problem}; "
                "nothing was written."
            )
    return heads


def first_line(head: bytes, encoding: str) -> str | None:
    """A file's first line from its first bytes, when they hold all of it (None: they may not).

    As Java's ``BufferedReader.readLine`` reads it (ended by a line feed, a carriage return
    or both), for an encoding that writes those as single bytes (UTF-8, Latin-1, …); a line
    longer than the bytes read, or another encoding, is read from the file.
    """
    try:
        if "\n".encode(encoding) != b"\n" or "\r".encode(encoding) != b"\r":
            return None
        ends = [at for at in (head.find(b"\n"), head.find(b"\r")) if at >= 0]
        if not ends:
            return head.decode(encoding) if len(head) < SNIFF_BYTES else None
        return head[: min(ends)].decode(encoding)
    except (LookupError, UnicodeDecodeError):
        return None


def read_event_lines(spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
    """JSON events as lines of text (``_line``), with where each line sits (file, split, id).

    From the table's transport: files' lines, or a topic's records.
    """
    return transport_of(table).read_lines(spark, table, files)
