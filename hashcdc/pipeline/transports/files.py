"""Files in the landing zone (``source.path``): the default transport.

A date's extract is the data files at the table's ``source.path`` for the date, listed
through Hadoop's FileSystem API (:mod:`hashcdc.runtime.hadoop`), so it may land on any
Hadoop URI. ``hashcdc capture`` lands a database's changes here too, one file per roll,
with the table's schema-change events beside them (``_schema-…``). The stream watches
the landing folder: a date's new or changed files, in bounded batches.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.errors import HashcdcError, InputDataError
from hashcdc.pipeline.columns import BLOCK_START, LINE_COLUMN, ROW_ID, SOURCE_FILE
from hashcdc.pipeline.evolution.schema_changes import SCHEMA_FILE_PREFIX
from hashcdc.pipeline.transports.base import (
    StreamLimits,
    StreamRead,
    Transport,
    Watch,
    looked_up,
)
from hashcdc.runtime.hadoop import HadoopFiles, resolve_location
from hashcdc.state.versions import DateVersion, local_location

DATE_PLACEHOLDER = "{business_date}"
DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}")
# A landed file's name, size and modification time: a date's files changed when these did.
Signature = tuple[tuple[str, int, int], ...]
# The files tables sharing folders may name to be read as one (each a key of a map in the
# plan); past it, each table reads its own.
NAMED_FILES = 1000


def resolve_source_path(table: TableConfig, business_date: str) -> str:
    """The extract's path for a date; relative paths are taken from the project folder."""
    project_dir = os.environ.get("DBT_PROJECT_DIR") or os.getcwd()
    return resolve_location(table.source.path_for(business_date), project_dir)


def position_columns() -> list[Column]:
    """Where each row of a text file sits, cheaply: its file, its split, an id in the split.

    Line numbers are derived from them only for rejected rows.
    """
    return [
        F.col("_metadata.file_path").alias(SOURCE_FILE),
        F.col("_metadata.file_block_start").alias(BLOCK_START),
        F.monotonically_increasing_id().alias(ROW_ID),
    ]


def local_path(file: str) -> str:
    """A file's path on this machine (a ``file:`` URI's), to compare with a listed path."""
    return str(local_location(file) or file)


# A capture's unfinished parts (``_capturing-…``, ``.…``), left out as Spark leaves them.
HIDDEN = ("_", ".")


def landed_dates(table: TableConfig, project_dir: Path) -> dict[str, Signature]:
    """The business dates a table's landing holds, each with its files' signature.

    Hidden names (``_capturing-…``, ``.…``) are a capture's unfinished parts: left out, as
    Spark leaves them out of a run.
    """
    marker = "0000-00-00"
    location = resolve_location(table.source.path_for(marker), str(project_dir))
    if "://" in location.removeprefix("file://"):
        raise HashcdcError(
            f"table '{table.name}': hashcdc stream watches a local landing folder; "
            f"source.path is {table.source.path}"
        )
    local = location.removeprefix("file://").removeprefix("file:")
    if marker not in local:
        raise HashcdcError(
            f"table '{table.name}': source.path has no {DATE_PLACEHOLDER}: the stream needs "
            "a landing folder per business date (as hashcdc capture writes)"
        )
    prefix = local[: local.index(marker)]
    files: dict[str, list[tuple[str, int, int]]] = {}
    for match in glob.glob(local.replace(marker, "????-??-??")):
        date = match[len(prefix) : len(prefix) + len(marker)]
        if not DATE_PATTERN.fullmatch(date):
            continue
        found = files.setdefault(date, [])
        if not os.path.isfile(match):
            found += _folder_files(match)
        elif not os.path.basename(match).startswith(HIDDEN):
            with contextlib.suppress(FileNotFoundError):  # a file renamed away meanwhile
                stat = os.stat(match)
                found.append((match, stat.st_size, stat.st_mtime_ns))
    return {date: tuple(sorted(entries)) for date, entries in files.items() if entries}


def _folder_files(folder: str) -> list[tuple[str, int, int]]:
    """A date folder's visible files, each with its size and modification time.

    One scan of the folder (a stream looks at every folder of its tables at each step,
    thousands of files after an hour): its entries' types come with the listing.
    """
    found: list[tuple[str, int, int]] = []
    with contextlib.suppress(FileNotFoundError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(HIDDEN):
                continue
            with contextlib.suppress(FileNotFoundError):  # a file renamed away meanwhile
                if entry.is_file():
                    stat = entry.stat()
                    found.append((entry.path, stat.st_size, stat.st_mtime_ns))
    return found


def next_files(before: Signature, now: Signature, limit: int) -> tuple[list[str], Signature]:
    """The next micro-batch's files, and what the stream has read once they are applied.

    At most ``limit`` of the files new or changed since ``before``, the first landed (by
    modification time, as Spark's file source takes them): a backlog is applied in the
    order a running stream would have seen it, so no event is applied after a later one
    (a capture's snapshot files, say, whose names sort after its first rolls). The rest
    wait for later batches.
    """
    known = set(before)
    fresh = sorted((entry for entry in now if entry not in known), key=lambda e: (e[2], e[0]))
    changed = fresh[:limit]
    taken = known | set(changed)
    return [entry[0] for entry in changed], tuple(entry for entry in now if entry in taken)


class LandedFiles(Watch):
    """The stream's watch of a landing folder: each date's files new or changed since read."""

    def __init__(self, table: TableConfig, project_dir: Path, limits: StreamLimits) -> None:
        self.table, self.project_dir, self.limits = table, project_dir, limits
        # Per date, the files (their signature) the stream has applied.
        self.seen: dict[str, Signature] = {}

    def reads(self, latest: Callable[[], DateVersion | None]) -> Iterator[StreamRead]:
        """The dates whose files changed since this stream last applied them, in order."""
        landed = landed_dates(self.table, self.project_dir)
        for date in sorted(landed):
            signature = landed[date]
            if self.seen.get(date) == signature:
                continue
            state = latest()
            if state is not None and date < state.business_date:
                if date in self.seen:
                    self.limits.say(
                        f"hashcdc stream: {self.table.name}: files of {date} changed after the "
                        f"stream moved on to {state.business_date}; they are not applied. "
                        f"Run `hashcdc replay --from {date} --select {self.table.name}`."
                    )
                self.seen[date] = signature
                continue
            while self.seen.get(date) != signature:
                files, read = next_files(self.seen.get(date, ()), signature, self.limits.max_files)
                yield StreamRead(date, files, lambda date=date, read=read: self._read(date, read))

    def _read(self, date: str, read: Signature) -> None:
        self.seen[date] = read


class Files(Transport):
    """Files in the landing zone, at ``source.path`` (any Hadoop URI)."""

    name = "files"
    description = (
        "files in the landing zone at source.path, one folder or file pattern per business "
        "date (also where hashcdc capture lands a database's changes)"
    )

    def carries(self, table: TableConfig) -> bool:
        """Every table not carried by another transport."""
        del table
        return True

    def locations(self, spark: SparkSession, table: TableConfig, business_date: str) -> list[str]:
        """The data files at the table's ``source.path`` for the date."""
        path = resolve_source_path(table, business_date)
        files = HadoopFiles.of(spark).data_files(path)
        if not files:
            raise InputDataError(
                f"table '{table.name}': no extract for business date {business_date}: "
                f"expected {table.source.format} data at {path} (source.path in "
                f"{table.config_file}). Nothing was written; deliver the extract and re-run "
                "the date."
            )
        return files

    def only(self, locations: list[str], taken: AbstractSet[str]) -> list[str]:
        """The date's files a micro-batch named; all of them when none is left."""
        return [f for f in locations if local_path(f) in taken] or locations

    def read_lines(
        self, spark: SparkSession, table: TableConfig, locations: list[str]
    ) -> DataFrame:
        """Each line of the files, with its file, split and an id in the split."""
        del table
        return spark.read.text(locations).select(
            F.col("value").alias(LINE_COLUMN), *position_columns()
        )

    def source_member(self, locations: dict[str, list[str]]) -> Column | None:
        """The table of a row's file: by its folder, by the file where tables share one.

        Spark names a row's file as a URI (``_metadata.file_path``, escaped), a listing as
        a path: the escapes are undone before it is looked up (a ``+`` is no space in a
        URI). A row of none of the tables fails the query naming its file, never left out.
        None when tables share folders and name more than :data:`NAMED_FILES` files.
        """
        folders: dict[str, str] = {}
        for table, files in locations.items():
            for file in files:
                folders.setdefault(file.rsplit("/", 1)[0], table)
        path = F.url_decode(F.replace(F.col(SOURCE_FILE), F.lit("+"), F.lit("%2B")))
        by_folder = all(
            folders[f.rsplit("/", 1)[0]] == t for t, fs in locations.items() for f in fs
        )
        if by_folder:
            named, key = folders, F.regexp_extract(path, r"^(.*)/[^/]*$", 1)
        elif sum(map(len, locations.values())) <= NAMED_FILES:
            named, key = {f: t for t, fs in locations.items() for f in fs}, path
        else:
            return None
        return looked_up(named, key, F.col(SOURCE_FILE))

    def within_date(self, table: TableConfig, locations: list[str], commit_ms: Column) -> Column:
        """A date's files hold the date's events."""
        del table, locations, commit_ms
        return F.lit(True)

    def partition(self, source_file: Column) -> Column:
        """Files have no partitions."""
        del source_file
        return F.lit(None).cast("int")

    def schema_change_files(self, spark: SparkSession, locations: list[str]) -> list[str]:
        """The schema-change files in the folders of the locations."""
        hadoop = HadoopFiles.of(spark)
        folders = sorted({file.rsplit("/", 1)[0] for file in locations})
        return [f for folder in folders for f in hadoop.files_named(folder, SCHEMA_FILE_PREFIX)]

    def watch(
        self, spark: SparkSession, table: TableConfig, project_dir: Path, limits: StreamLimits
    ) -> Watch:
        """The landing folder's dates, watched from this machine."""
        del spark
        return LandedFiles(table, project_dir, limits)
