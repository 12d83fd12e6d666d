"""What every transport offers the pipeline and the stream (:class:`Transport`).

A transport is where a table's extracts or events land and how they are read from there:
files in the landing zone (``source.path``, also where ``hashcdc capture`` lands a
database's changes), a Kafka topic (``source.kafka``). The stage, the checks, the
rejects, the change-feed path and ``hashcdc stream`` ask a table's transport
(:func:`hashcdc.pipeline.transports.transport_of`) and never switch on the kind; how the
rows of what it delivers are parsed is the input format's (:mod:`hashcdc.pipeline.inputs`).

A date's extract is a list of *locations*: a transport's own names (a file's path, a
topic's read as ``kafka://…``) that the pipeline passes back to it unread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import Column, DataFrame, SparkSession

    from hashcdc.config import TableConfig
    from hashcdc.state.versions import DateVersion


@dataclass(frozen=True)
class StreamRead:
    """One micro-batch a transport has for the stream: a date's locations to apply.

    ``done`` is called once the batch is committed: the transport then counts its
    locations as read (a failed batch is offered again by the next stream).
    """

    business_date: str
    locations: list[str]
    done: Callable[[], None]


@dataclass(frozen=True)
class StreamLimits:
    """What a watch gets from the stream: a batch's bounds, its voice, the events' reader.

    ``raw_events(spark, table, locations)``: the table's input format's raw events of
    some locations (a watch probes what it has not read with it).
    """

    max_files: int
    max_records: int
    say: Callable[[str], None]
    raw_events: Callable[[SparkSession, TableConfig, list[str]], DataFrame]


class Watch:
    """A transport's side of ``hashcdc stream`` for one table: what it has not applied yet.

    ``reads`` yields the micro-batches in the order they must apply, given the state's
    latest date as it is when each is asked for (``latest``); ``problem`` says why the
    source did not answer its last look (the stream retries it, and does not close the
    table's open date meanwhile, which would read it).
    """

    problem: str | None = None

    @property
    def away(self) -> bool:
        """Whether the source did not answer the last look."""
        return self.problem is not None

    def reads(self, latest: Callable[[], DateVersion | None]) -> Iterator[StreamRead]:
        """The batches that have landed since the last one ``done``, in order."""
        raise NotImplementedError


class Transport:
    """Where a table's extracts land and how they are read: a subclass per transport.

    Attributes
    ----------
    name : str
        The transport's name, for messages and the docs.
    description : str
        What it is and which tables it carries.
    sniffs_bytes : bool
        Its locations are files whose first bytes can be checked for a compressed,
        archive or binary file before anything is read.
    partitioned : bool
        Its events come in partitions read to different points (a topic's): each
        partition keeps a watermark of its own in the state (the ``P`` rows).

    """

    name: ClassVar[str]
    description: ClassVar[str]
    sniffs_bytes: ClassVar[bool] = True
    partitioned: ClassVar[bool] = False

    def carries(self, table: TableConfig) -> bool:
        """Whether this transport delivers ``table``'s extracts (by the table's config)."""
        raise NotImplementedError

    def locations(self, spark: SparkSession, table: TableConfig, business_date: str) -> list[str]:
        """The locations of a table's extract for a date.

        Raises
        ------
        InputDataError
            When there is none (or the source does not answer): naming the table, the
            date, where it was looked for and the config field that says so.

        """
        raise NotImplementedError

    def only(self, locations: list[str], taken: AbstractSet[str]) -> list[str]:
        """Of a date's locations, those a micro-batch named (``taken``: their local paths)."""
        del locations
        return sorted(taken)

    def read_lines(
        self, spark: SparkSession, table: TableConfig, locations: list[str]
    ) -> DataFrame:
        """What the locations hold as lines of text (``_line``) with where each sits."""
        raise NotImplementedError

    def within_date(self, table: TableConfig, locations: list[str], commit_ms: Column) -> Column:
        """Whether an event of the read belongs to its date (true where a location is one date)."""
        raise NotImplementedError

    def partition(self, source_file: Column) -> Column:
        """An event's partition of the source (an int; null where the source has none)."""
        raise NotImplementedError

    def record_number(self) -> Column | None:
        """A record's number in its source when the transport knows it, else None.

        None: the input format numbers a rejected row from the files' splits.
        """
        return None

    def schema_change_files(self, spark: SparkSession, locations: list[str]) -> list[str]:
        """The files of schema-change events landed beside the locations (none: [])."""
        del spark, locations
        return []

    def source_member(self, locations: dict[str, list[str]]) -> Column | None:
        """Which table a row read from several tables' locations at once came from.

        ``locations``: each table's; a column over the rows' ``_source_file``. None: the
        transport cannot tell them apart, or read them in one relation, so each table
        reads its own.
        """
        del locations
        return None

    def watch(
        self, spark: SparkSession, table: TableConfig, project_dir: Path, limits: StreamLimits
    ) -> Watch:
        """The stream's watch of ``table`` on this transport."""
        raise NotImplementedError

    def gather(self, watches: list[Watch]) -> None:
        """The watches of a table group's members on this transport (none: each its own)."""
        del watches

    def __repr__(self) -> str:
        return f"<transport {self.name}>"


def looked_up(names: dict[str, str], key: Column, source_file: Column) -> Column:
    """The table ``names`` gives a row's ``key``; a row of none fails, naming its source.

    A row is never left out unnamed: the query stops with its file (or topic).
    """
    from pyspark.sql import functions as F  # noqa: N812, PLC0415 - Spark loads with the stage

    table = F.create_map(*[F.lit(part) for item in sorted(names.items()) for part in item])
    unknown = F.concat(F.lit("hashcdc: a row of none of the tables read: "), source_file)
    return F.coalesce(F.try_element_at(table, key), F.raise_error(unknown))
