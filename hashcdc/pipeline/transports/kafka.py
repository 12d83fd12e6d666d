"""A Kafka topic (``source.kafka``): change events read through Spark's Kafka source.

A business date's events are those whose source commit time falls in the date, in the
table's time zone (``changes.time_zone``, UTC by default; as ``hashcdc capture`` lands
them). A date's read starts at the first record whose Kafka
timestamp is at or after the date's start, less ``clock_skew_seconds`` (a record is
produced after its commit, so no earlier record holds an event of the date), and goes to
the topic's end; events committed after the date are left for the next one. Events of
earlier dates in the window (late records) are kept: the stage recognises those the state
has applied by its sequence watermark, as for files read again, so each event is applied
once and no offsets need keeping. Tombstones (null values) carry nothing to apply.

``hashcdc stream`` reads from the offsets it read up to (:class:`TopicRead` ``start``)
to those a probe found (``end``): bounded batches of new records only.

In the rest of the pipeline a topic's read is one location (:meth:`TopicRead.location`);
a row's file is ``kafka://<topic>/<partition>`` and its row id the record's offset.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.dates import date_bounds_ms, date_in_zone
from hashcdc.errors import InputDataError, telling_line
from hashcdc.pipeline.columns import (
    BLOCK_START,
    EVENT_TIME_RAW,
    LINE_COLUMN,
    ROW_ID,
    SOURCE_FILE,
)
from hashcdc.pipeline.transports.base import (
    StreamLimits,
    StreamRead,
    Transport,
    Watch,
    looked_up,
)
from hashcdc.state.versions import DateVersion

SCHEME = "kafka://"
# A read of every date (the stream's probe).
ANY_DATE = "*"
# Offsets per partition (the next record to read).
Offsets = dict[int, int]


@dataclass(frozen=True)
class TopicRead:
    """What of a topic one read takes: a date's events, from and to offsets when given."""

    topic: str
    business_date: str = ANY_DATE
    start: Offsets | None = None
    end: Offsets | None = None
    # Without start offsets: the Kafka timestamp (ms) to start at (default: the date's).
    since: int | None = None

    def location(self) -> str:
        """``kafka://<topic>/<date>[?start=…&end=…]``: where the pipeline keeps a file."""
        query = {
            name: json.dumps({str(p): o for p, o in offsets.items()})
            for name, offsets in (("start", self.start), ("end", self.end))
            if offsets is not None
        }
        if self.since is not None:
            query["since"] = str(self.since)
        suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
        return f"{SCHEME}{self.topic}/{self.business_date}{suffix}"

    @classmethod
    def parse(cls, location: str) -> TopicRead:
        """The read a location names."""
        parts = urllib.parse.urlsplit(location)
        query = urllib.parse.parse_qs(parts.query)

        def offsets(name: str) -> Offsets | None:
            if name not in query:
                return None
            return {int(p): int(o) for p, o in json.loads(query[name][0]).items()}

        topic, date = f"{parts.netloc}{parts.path}".rsplit("/", 1)
        since = int(query["since"][0]) if "since" in query else None
        return cls(topic, date, offsets("start"), offsets("end"), since)


def topic_location(table: TableConfig, business_date: str) -> str:
    """The location of a topic's business date (all of its window)."""
    assert table.source.kafka is not None
    return TopicRead(table.source.kafka.topic, business_date).location()


def check_reachable(table: TableConfig, seconds: float = 5.0) -> None:
    """Refuse a date at once when no bootstrap server answers.

    Spark's Kafka source would retry for a minute and fail with a JVM stack trace.

    Raises
    ------
    InputDataError
        Naming the servers, the config field and that nothing was written.

    """
    kafka = table.source.kafka
    assert kafka is not None
    problems = []
    for server in kafka.bootstrap_servers.split(","):
        host, port = server.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=seconds):
                return
        except OSError as exc:
            problems.append(f"{server}: {exc.strerror or exc}")
    raise InputDataError(
        f"table '{table.name}': no Kafka broker answers ({'; '.join(problems)}): check "
        f"source.kafka.bootstrap_servers in {table.config_file} and that the brokers are "
        "up. Nothing was written; run the date again."
    )


def listed_offsets(
    spark: SparkSession, asked: list[tuple[TableConfig, int | None]]
) -> dict[str, tuple[Offsets, Offsets]]:
    """Each table's topic's partitions: where a read from ``since`` starts, and their end.

    ``asked``: each table with its ``since``, all on one cluster (a table group's topics
    share their transport: the first table's brokers and client options are used), listed
    by one admin client. The start is the first record at or after ``since`` (Kafka
    timestamp in ms; None: the partition's first record), or the partition's end when it
    has none. Spark's Kafka source takes start offsets only for every partition of the
    topic, and a partition that has had no record since is in no read's records: the
    broker lists them (Kafka's admin client in the driver's JVM, from the Kafka source's
    own jars). The end (the offset the next record will have) tells a stream whether there
    is anything to read.
    """
    kafka = asked[0][0].source.kafka
    assert kafka is not None
    jvm = spark.sparkContext._jvm
    clients, common = jvm.org.apache.kafka.clients.admin, jvm.org.apache.kafka.common
    seconds = jvm.java.util.concurrent.TimeUnit.SECONDS
    settings = jvm.java.util.Properties()
    settings.setProperty("bootstrap.servers", kafka.bootstrap_servers)
    for name, value in kafka.options.items():
        settings.setProperty(name, str(value))
    topics = [table.source.kafka.topic for table, _ in asked]  # type: ignore[union-attr]
    admin = clients.Admin.create(settings)
    try:
        names = jvm.java.util.ArrayList()
        for topic in topics:
            names.add(topic)
        described = admin.describeTopics(names).allTopicNames().get(30, seconds)
        partitions = {
            topic: [info.partition() for info in described.get(topic).partitions()]
            for topic in topics
        }

        def offsets(specs: dict[str, object]) -> dict[str, Offsets]:
            request = jvm.java.util.HashMap()
            for topic, spec in specs.items():
                for partition in partitions[topic]:
                    request.put(common.TopicPartition(topic, partition), spec)
            listed = admin.listOffsets(request).all().get(30, seconds)
            return {
                topic: {
                    p: int(listed.get(common.TopicPartition(topic, p)).offset())
                    for p in partitions[topic]
                }
                for topic in specs
            }

        at = offsets(
            {
                topic: clients.OffsetSpec.earliest()
                if since is None
                else clients.OffsetSpec.forTimestamp(since)
                for topic, (_, since) in zip(topics, asked, strict=True)
            }
        )
        end = offsets(dict.fromkeys(topics, clients.OffsetSpec.latest()))
        starts = {
            topic: {p: o if o >= 0 else end[topic][p] for p, o in at[topic].items()}
            for topic in topics
        }
        return {topic: (starts[topic], end[topic]) for topic in topics}
    finally:
        admin.close()


def date_end_ms(table: TableConfig, business_date: str) -> int:
    """The end of a business date in the table's time zone, in epoch milliseconds."""
    return date_bounds_ms(business_date, table.time_zone)[1]


def date_start_ms(table: TableConfig, business_date: str) -> int:
    """The Kafka timestamp a date's read starts at (its start, less the clock skew)."""
    assert table.source.kafka is not None
    start = date_bounds_ms(business_date, table.time_zone)[0]
    return start - table.source.kafka.clock_skew_seconds * 1000


def commit_date(table: TableConfig, commit_ms: Column) -> Column:
    """The business date of a source commit time (epoch milliseconds) in the table's zone.

    Independent of the session's time zone.
    """
    moment = F.timestamp_millis(commit_ms.cast("bigint"))
    # The zone's wall clock as if it were UTC, then its day number.
    local_ms = F.unix_millis(F.from_utc_timestamp(moment, table.time_zone))
    return F.date_from_unix_date(F.floor(local_ms / 86_400_000).cast("int"))


def read_topic_lines(
    spark: SparkSession, table: TableConfig, locations: list[str], line_column: str
) -> DataFrame:
    """Reads' records as lines of text, with their topic and partition (as the file) and offset.

    One read, or several reads from offsets (a table group's topics looked at together),
    all on ``table``'s cluster: one relation of Spark's Kafka source.
    """
    kafka = table.source.kafka
    assert kafka is not None
    reads = [TopicRead.parse(location) for location in locations]
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", ",".join(dict.fromkeys(read.topic for read in reads)))
        .options(**{f"kafka.{name}": value for name, value in kafka.options.items()})
    )
    read = reads[0]
    assert one_relation(reads), locations
    if read.start is not None:
        reader = reader.option("startingOffsets", spark_offsets({r.topic: r.start for r in reads}))
    else:
        since = read.since
        if since is None and read.business_date != ANY_DATE:
            since = date_start_ms(table, read.business_date)
        if since is not None:
            reader = reader.option("startingTimestamp", str(since)).option(
                "startingOffsetsByTimestampStrategy",
                "latest",  # none that late: nothing to read
            )
    end = spark_offsets({r.topic: r.end for r in reads}) if read.end is not None else "latest"
    records = reader.option("endingOffsets", end).load()
    return records.where(F.col("value").isNotNull()).select(
        F.col("value").cast("string").alias(line_column),
        F.concat(
            F.lit(SCHEME), F.col("topic"), F.lit("/"), F.col("partition").cast("string")
        ).alias(SOURCE_FILE),
        F.lit(0).cast("bigint").alias(BLOCK_START),
        F.col("offset").alias(ROW_ID),
    )


def one_relation(reads: list[TopicRead]) -> bool:
    """Whether reads are one relation of Spark's Kafka source: one start and end for all.

    Each of its own topic, and all from offsets (to offsets, or all to the latest), or all
    of one date's window from one time.
    """
    read = reads[0]
    return (
        len({r.topic for r in reads}) == len(reads)
        and all((r.start is None) == (read.start is None) for r in reads)
        and all((r.end is None) == (read.end is None) for r in reads)
        and (
            read.start is not None
            or all(
                (r.business_date, r.since, r.end) == (read.business_date, read.since, None)
                for r in reads
            )
        )
    )


def spark_offsets(offsets: dict[str, Offsets | None]) -> str:
    """Offsets per topic and partition, as Spark's Kafka source takes them (JSON)."""
    return json.dumps({t: {str(p): o for p, o in (o or {}).items()} for t, o in offsets.items()})


def in_date(table: TableConfig, location: str, commit_ms: Column) -> Column:
    """Whether an event belongs to the read's date (or an earlier one): committed before its end.

    A read of any date keeps every event.
    """
    read = TopicRead.parse(location)
    if read.business_date == ANY_DATE:
        return F.lit(True)
    end = date_end_ms(table, read.business_date)
    return commit_ms.isNull() | (commit_ms.cast("bigint") < F.lit(end))


def partition_of(source_file: Column) -> Column:
    """A record's partition, from its ``_source_file``."""
    return F.element_at(F.split(source_file, "/"), -1).cast("int")


def _nothing() -> None:
    """A round's date applied: its offsets move once all of the round's dates are."""


class TopicWatch(Watch):
    """The stream's watch of a topic: the records after those it read, in bounded rounds.

    A round takes the records after those this stream read, at most ``max_records`` of a
    partition. A record belongs to the date of its commit, or the open date when that is
    later (a late event). Dates close as they do for files: when a later date's events
    come. Partitions are read to different points (each its own backlog, its producer's
    pace): each has its own watermark in the state (P rows), so a partition behind the
    others is applied when its records come, and a batch orders its events by sequence
    across partitions. Rounds follow one another until one finds no new record.

    The watches of a table group's topics look together (:meth:`Kafka.gather`): the
    first of them to need a round lists every topic's offsets (an admin client per
    cluster) and finds the new records' dates of all of them in one Spark job, and the
    others take their round from that look: one job a step, not one per topic.
    """

    def __init__(self, spark: SparkSession, table: TableConfig, limits: StreamLimits) -> None:
        self.spark, self.table, self.limits = spark, table, limits
        # The offsets this stream read up to (none yet: from its open date's start).
        self.positions: Offsets = {}
        # What the broker said when it did not answer (the stream says it and retries).
        self.problem = None
        # The watches that look together (a group's topics), this one among them.
        self.siblings: list[TopicWatch] = [self]
        # A look's round for this watch: (the state and positions it was taken at, its
        # start, its ends, what it found).
        self.looked: tuple[tuple[object, str], Offsets, Offsets, list[Found]] | None = None

    def reads(self, latest: Callable[[], DateVersion | None]) -> Iterator[StreamRead]:
        """Round after round, each date's range of new records, until a round finds none."""
        while True:
            state = latest()
            found = self._round(state)
            if found is None:
                return
            start, end, dates = found
            topic = self.table.source.kafka.topic  # type: ignore[union-attr]
            for date in dates:
                # Offered again from the round's start until all its dates are applied;
                # the offsets move when the last is (before this watch is asked again, so a
                # group's look sees where each of its topics stands).
                moved = functools.partial(self._move, end) if date == dates[-1] else _nothing
                yield StreamRead(date, [TopicRead(topic, date, start, end).location()], moved)

    def _move(self, end: Offsets) -> None:
        """A round's dates all applied: its records are read."""
        self.positions = end

    def _since(self, state: DateVersion | None) -> int | None:
        """Where a partition this stream has not read starts: its open date's start."""
        return date_start_ms(self.table, state.business_date) if state is not None else None

    def _mark(self, state: DateVersion | None) -> tuple[object, str]:
        """What a look's round depends on: the state's date and this watch's positions."""
        version = (state.business_date, state.version) if state is not None else None
        return version, json.dumps(sorted(self.positions.items()))

    def _round(self, state: DateVersion | None) -> tuple[Offsets, Offsets, list[str]] | None:
        """A round's start and end offsets and the dates of its records; None: nothing new."""
        try:
            if self.looked is None or self.looked[0] != self._mark(state):
                _look_together(self.siblings, state)
            assert self.looked is not None
            _, start, ends, found = self.looked
        except Exception as exc:  # noqa: BLE001 - a broker away: the stream retries it
            self.problem = telling_line(exc)
            return None
        finally:
            self.looked = None
        self.problem = None
        if not found:
            # Nothing, or only tombstones, up to the listed ends: the next round starts there.
            self.positions = {p: max(start.get(p, 0), e) for p, e in ends.items()}
            return None
        end = dict(start)
        for partition, _, offset in found:
            end[partition] = max(end.get(partition, 0), offset + 1)
        open_date = state.business_date if state is not None else None
        dates = sorted({max(date, open_date) if open_date else date for _, date, _ in found})
        return start, end, dates


# A probe's finding: a partition, a business date of its new records, their last offset.
Found = tuple[int, str, int]


def _look_together(watches: list[TopicWatch], state: DateVersion | None) -> None:
    """Each watch's next round from one look at all their topics (``watch.looked``).

    One admin client per cluster lists its topics' offsets; the topics with new records
    are read in one relation of Spark's Kafka source and their new records' dates found
    in one job (one per cluster, input format and time zone, should the group's topics
    differ in them). A broker that does not answer fails the look (each watch then says
    so and retries).
    """
    clusters: dict[str, list[TopicWatch]] = {}
    for watch in watches:
        clusters.setdefault(_cluster(watch.table), []).append(watch)
    rounds = []
    for members in clusters.values():
        check_reachable(members[0].table)
        # Partitions a stream has not read (all of them after a start, and any a topic
        # gained) from the open date's start; the others from where it read up to.
        listed = listed_offsets(members[0].spark, [(w.table, w._since(state)) for w in members])
        for watch in members:
            starts, ends = listed[watch.table.source.kafka.topic]  # type: ignore[union-attr]
            rounds.append((watch, {**starts, **watch.positions}, ends))
    # Nothing new in a topic's partitions: no read of it (an idle stream's rounds are cheap).
    fresh: dict[tuple[str, str, str], list[tuple[TopicWatch, Offsets]]] = {}
    for watch, start, ends in rounds:
        if any(start.get(partition, 0) < end for partition, end in ends.items()):
            kind = (_cluster(watch.table), watch.table.source.format, watch.table.time_zone)
            fresh.setdefault(kind, []).append((watch, start))
    found: dict[str, list[Found]] = {}
    for reads in fresh.values():
        for topic, partition, date, offset in _probe(reads):
            found.setdefault(topic, []).append((partition, date, offset))
    for watch, start, ends in rounds:
        its = found.get(watch.table.source.kafka.topic, [])  # type: ignore[union-attr]
        watch.looked = (watch._mark(state), start, ends, its)


def _cluster(table: TableConfig) -> str:
    """The Kafka cluster a table's topic is on, as its client settings say it."""
    kafka = table.source.kafka
    assert kafka is not None
    return json.dumps([kafka.bootstrap_servers, sorted(kafka.options.items())], default=str)


def _probe(reads: list[tuple[TopicWatch, Offsets]]) -> list[tuple[str, int, str, int]]:
    """New records' dates: per topic and partition, each commit date and its last offset.

    The topics share one cluster, input format and time zone, each read from its ``start``. At
    most ``max_records`` records of each partition, its first: the next round probes from
    where these end, so a backlog is applied in bounded batches.
    """
    [(first, _), *_] = reads
    table, limits = first.table, first.limits
    locations = [
        TopicRead(watch.table.source.kafka.topic, ANY_DATE, start).location()  # type: ignore[union-attr]
        for watch, start in reads
    ]
    raw = limits.raw_events(first.spark, table, locations)
    first_offset = F.min(ROW_ID).over(Window.partitionBy(SOURCE_FILE))
    raw = raw.withColumn("_first", first_offset).where(
        F.col(ROW_ID) < F.col("_first") + limits.max_records
    )
    # The commit's date in the table's time zone (no session time zone involved).
    committed = commit_date(table, F.col(EVENT_TIME_RAW))
    today = date_in_zone(dt.datetime.now(dt.UTC), table.time_zone)
    rows = (
        raw.groupBy(
            F.col(SOURCE_FILE).alias("source"),
            F.coalesce(committed.cast("string"), F.lit(today)).alias("business_date"),
        )
        .agg(F.max(ROW_ID).alias("offset"))
        .collect()
    )
    found = []
    for row in rows:
        topic, partition = row["source"].removeprefix(SCHEME).rsplit("/", 1)
        found.append((topic, int(partition), row["business_date"], row["offset"]))
    return found


class Kafka(Transport):
    """A Kafka topic of change events (``source.kafka``), read through Spark's Kafka source."""

    name = "kafka"
    description = (
        "a Kafka topic of change events (source.kafka: its brokers and topic); a business "
        "date is the events committed in it, in the table's time zone"
    )
    sniffs_bytes = False
    partitioned = True

    def carries(self, table: TableConfig) -> bool:
        """The tables with ``source.kafka``."""
        return table.source.kafka is not None

    def locations(self, spark: SparkSession, table: TableConfig, business_date: str) -> list[str]:
        """The date's read of the topic (all of its window), once a broker answers."""
        del spark
        check_reachable(table)
        return [topic_location(table, business_date)]

    def only(self, locations: list[str], taken: AbstractSet[str]) -> list[str]:
        """The reads of the table's topic a micro-batch named (a group's names its members')."""
        topics = {TopicRead.parse(location).topic for location in locations}
        return sorted(t for t in taken if TopicRead.parse(t).topic in topics) or locations

    def read_lines(
        self, spark: SparkSession, table: TableConfig, locations: list[str]
    ) -> DataFrame:
        """The reads' records as lines, with their topic and partition (as the file) and offset."""
        return read_topic_lines(spark, table, locations, LINE_COLUMN)

    def within_date(self, table: TableConfig, locations: list[str], commit_ms: Column) -> Column:
        """Committed before the read's date ends (:func:`in_date`)."""
        return in_date(table, locations[0], commit_ms)

    def source_member(self, locations: dict[str, list[str]]) -> Column | None:
        """The table of a record, by its topic, when the tables' reads are one relation.

        They are when each table reads a topic of its own, all from offsets to offsets (a
        micro-batch's) or all of one date's window (:func:`one_relation`).
        """
        reads = {table: [TopicRead.parse(at) for at in where] for table, where in locations.items()}
        if not one_relation([read for each in reads.values() for read in each]):
            return None
        topics = {read.topic: table for table, each in reads.items() for read in each}
        topic = F.regexp_extract(F.col(SOURCE_FILE), f"^{SCHEME}(.*)/[0-9]+$", 1)
        return looked_up(topics, topic, F.col(SOURCE_FILE))

    def partition(self, source_file: Column) -> Column:
        """The record's partition (:func:`partition_of`)."""
        return partition_of(source_file)

    def record_number(self) -> Column | None:
        """A record's number is its offset in its partition."""
        return F.col(ROW_ID)

    def watch(
        self, spark: SparkSession, table: TableConfig, project_dir: Path, limits: StreamLimits
    ) -> Watch:
        """The topic, read from where this stream read up to."""
        del project_dir
        return TopicWatch(spark, table, limits)

    def gather(self, watches: list[Watch]) -> None:
        """A table group's topics: their watches look together (:class:`TopicWatch`)."""
        topics = [w for w in watches if isinstance(w, TopicWatch)]
        for watch in topics:
            watch.siblings = topics
