"""``hashcdc stream``: change feeds applied to their state as their events land.

The stream watches each selected change feed's landing folders (``source.path``, one per
business date: where ``hashcdc capture`` lands a table's events by their commit date), or
its Kafka topic (``source.kafka``: :meth:`Stream._step_topic`).
When a date's files change, the date runs as a *micro-batch*: ``dbt run`` of the table's
stage and state models with the var ``hashcdc_micro_batch``, the same models and macros
as the daily path. The stage marks the events the state as it is has not applied
(its ``W`` watermark and ``A`` rows, :class:`hashcdc.pipeline.feed.PriorState`), and the
state's MERGE applies them on top of the date's earlier micro-batches in one Delta commit,
which carries the new watermark: the position and the state move together, so a batch
killed before its commit is applied again by the next one, and one committed is never
applied twice (events are recognised by their content, not by a stream checkpoint).

A date stays *open* while micro-batches apply it (its history is not written). When the
first events of a later date land, the stream closes the open date before it applies
them: a whole-date ``dbt build`` of the table (``hashcdc run --date`` does the same). It
computes the date from its files against the date before, as a daily run does, and
merges that on top of the micro-batches in one commit (the date plan's ``close`` mode: no
restore, so a reader never sees the date before again); its history is the net of the
date's commits, then its tests and audit run as a daily run's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import glob
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbt_common.invocation import get_invocation_id
from pyspark.sql import Window
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.dates import date_bounds_ms, date_in_zone
from hashcdc.errors import HashcdcError
from hashcdc.pipeline import kafka
from hashcdc.pipeline.columns import ROW_ID, SOURCE_FILE
from hashcdc.pipeline.inputs import table_reader
from hashcdc.pipeline.inputs.events import EVENT_TIME_RAW
from hashcdc.relations import Relations
from hashcdc.runtime.hadoop import resolve_location
from hashcdc.runtime.lock import table_locks
from hashcdc.runtime.project import dbt_args, invoke_dbt, table_selector
from hashcdc.state import audit
from hashcdc.state.versions import DateVersion, applied_versions

DATE_PLACEHOLDER = "{business_date}"
DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}")
# The var that makes a date's run a micro-batch (read by the macro date_command).
MICRO_BATCH_VAR = "hashcdc_micro_batch"
# A landed file's name, size and modification time: a date's files changed when these did.
Signature = tuple[tuple[str, int, int], ...]


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
        paths = [Path(match)] if os.path.isfile(match) else sorted(Path(match).glob("*"))
        for path in paths:
            if path.name.startswith(("_", ".")) or not path.is_file():
                continue
            with contextlib.suppress(FileNotFoundError):  # a file renamed away meanwhile
                stat = path.stat()
                found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return {date: tuple(sorted(entries)) for date, entries in files.items() if entries}


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


@dataclass(frozen=True)
class Batch:
    """What one micro-batch (or a date's close) did, from the run's audit row."""

    table: str
    business_date: str
    status: str
    events: int
    counts: dict[str, int]
    seconds: float
    # Source commit time of the latest applied event → the state's commit, in seconds.
    lag: float | None
    error: str | None

    def line(self, closing: bool = False) -> str:
        """One line for the stream's output."""
        stamp = dt.datetime.now().strftime("%H:%M:%S")
        what = "closed" if closing else "applied"
        # The events read: a micro-batch reads its date's files again, applies the new.
        if self.status in audit.FAILED_STATUSES:
            return f"{stamp} {self.table} {self.business_date}: failed: {self.error}"
        counts = " ".join(f"{letter} {self.counts.get(letter, 0)}" for letter in "IUD")
        lag = f"; lag {self.lag:.1f} s" if self.lag is not None and not closing else ""
        return (
            f"{stamp} {self.table} {self.business_date}: {what}: {counts} "
            f"({self.events} event(s) read) in {self.seconds:.1f} s{lag}"
        )


def _batch_of(row: Any) -> Batch:
    counts = {letter: int(row[column] or 0) for letter, column in audit.OPERATIONS}
    lag = None
    if row["latest_event_at"] is not None and row["ended_at"] is not None:
        lag = max(0.0, (row["ended_at"] - row["latest_event_at"]).total_seconds())
    return Batch(
        table=row["table_name"],
        business_date=str(row["business_date"]),
        status=row["status"],
        events=int(row["rows_in"] or 0),
        counts=counts,
        seconds=float(row["seconds"] or 0.0),
        lag=lag,
        error=row["error_message"],
    )


@dataclass
class Stream:
    """The stream of some change-feed tables in one Spark session.

    ``turn`` gives each step the writer's turn (the engine's, :func:`writer_turn`);
    ``stopping`` says when to stop, checked between steps.
    """

    spark: Any
    project_dir: Path
    schema: str
    tables: list[TableConfig]
    log_dir: Path
    extra: tuple[str, ...] = ()
    turn: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext
    stopping: Callable[[], bool] = lambda: False
    print: Callable[[str], None] = print
    # Bounded micro-batches, whatever the backlog (a stream started after a long stop): at
    # most this many landed files, or records of a topic, a batch; the rest in later ones.
    max_files: int = 100
    max_records: int = 1_000_000
    # Minutes after an open date's end (the table's zone) when the stream closes it itself;
    # None: when a later date's first events come (or a user's `hashcdc run --date`).
    close_after: float | None = None
    # When each table's open date was last looked at for --close-after (monotonic seconds).
    close_looked: dict[str, float] = field(default_factory=dict)
    seen: dict[tuple[str, str], Signature] = field(default_factory=dict)
    # A topic's offsets this stream read up to (none yet: from its open date's start).
    positions: dict[str, kafka.Offsets] = field(default_factory=dict)
    # Tables whose brokers did not answer, with the message said once.
    unreachable: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def run(self, interval: float, once: bool = False) -> int:
        """Apply what lands until stopped (``once``: what has landed, then return)."""
        self.print(
            f"hashcdc stream: {', '.join(t.name for t in self.tables)}; watching their landing "
            f"folders and topics every {interval:g} s"
            + (" (once)" if once else " (SIGTERM or Ctrl-C stops)")
        )
        while not self.stopping():
            for table in self.tables:
                if table.name not in self.failed and not self.stopping():
                    self.step(table)
            if once or len(self.failed) == len(self.tables):
                break
            for _ in self._pauses(interval):
                if self.stopping():
                    break
        self.print(
            "hashcdc stream: stopped"
            + (f"; failed: {', '.join(sorted(self.failed))}" if self.failed else "")
        )
        return 1 if self.failed else 0

    @staticmethod
    def _pauses(interval: float) -> Iterator[None]:
        """Sleep ``interval`` seconds in short pauses (a stop is seen within one)."""
        deadline = time.monotonic() + interval
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(0.2, left))
            yield

    def step(self, table: TableConfig) -> None:
        """Apply what landed since this stream last looked; close the open date when due."""
        if table.source.kafka is not None:
            # One bounded range of records a round, until the topic has no new one.
            while self._topic_round(table) and not self.stopping():
                pass
        else:
            self._files_step(table)
        if table.name not in self.failed and not self.stopping():
            self._close_when_over(table)

    def _files_step(self, table: TableConfig) -> None:
        """Apply the dates whose files changed since this stream last applied them."""
        landed = landed_dates(table, self.project_dir)
        latest = self._latest(table)
        for date in sorted(landed):
            signature = landed[date]
            if self.seen.get((table.name, date)) == signature:
                continue
            if latest is not None and date < latest.business_date:
                if (table.name, date) in self.seen:
                    self.print(
                        f"hashcdc stream: {table.name}: files of {date} changed after the "
                        f"stream moved on to {latest.business_date}; they are not applied. "
                        f"Run `hashcdc replay --from {date} --select {table.name}`."
                    )
                self.seen[(table.name, date)] = signature
                continue
            while self.seen.get((table.name, date)) != signature:
                if self.stopping():
                    return None
                files, read = next_files(
                    self.seen.get((table.name, date), ()), signature, self.max_files
                )
                if not self._turn(table, latest, date, files):
                    return None
                self.seen[(table.name, date)] = read
                latest = self._latest(table)
        return None

    def _topic_round(self, table: TableConfig) -> bool:
        """Apply a topic's next records, date by date; whether it applied any.

        The records after those this stream read, at most ``max_records`` of a partition. A
        record belongs to the date of its commit, or the open date when that is later (a
        late event). Dates close as they do for files: when a later date's events come.
        Partitions are read to different points (each its own backlog, its producer's
        pace): each has its own watermark in the state (P rows), so a partition behind the
        others is applied when its records come, and a batch orders its events by
        sequence across partitions.
        """
        assert table.source.kafka is not None
        topic = table.source.kafka.topic
        latest = self._latest(table)
        since = kafka.date_start_ms(table, latest.business_date) if latest is not None else None
        try:
            kafka.check_reachable(table)
            # Partitions this stream has not read (all of them after a start, and any the
            # topic gained) from the open date's start; the others from where it read up to.
            listed, ends = kafka.listed_offsets(self.spark, table, since)
            start = {**listed, **self.positions.get(table.name, {})}
            # Nothing new in any partition: no Spark job (an idle stream's rounds are cheap).
            fresh = any(start.get(partition, 0) < end for partition, end in ends.items())
            read = kafka.TopicRead(topic, kafka.ANY_DATE, start)
            found = self._probe(table, read) if fresh else []
        except Exception as exc:  # noqa: BLE001 - a broker away: tried again next step
            problem = str(exc).strip().splitlines()[0]
            if self.unreachable.get(table.name) != problem:
                self.print(f"hashcdc stream: {problem}; trying again every step")
            self.unreachable[table.name] = problem
            return False
        self.unreachable.pop(table.name, None)
        if not found:
            # Nothing, or only tombstones, up to the listed ends: the next round starts there.
            self.positions[table.name] = {p: max(start.get(p, 0), e) for p, e in ends.items()}
            return False
        end = dict(start)
        for partition, _, offset in found:
            end[partition] = max(end.get(partition, 0), offset + 1)
        open_date = latest.business_date if latest is not None else None
        dates = sorted({max(date, open_date) if open_date else date for _, date, _ in found})
        for date in dates:
            if self.stopping():
                return False
            read = kafka.TopicRead(topic, date, start, end)
            if not self._turn(table, latest, date, [read.location()]):
                return False
            latest = self._latest(table)
        self.positions[table.name] = end
        return True

    def _probe(self, table: TableConfig, read: kafka.TopicRead) -> list[tuple[int, str, int]]:
        """A read's new records: partition, business date of the commit, greatest offset.

        At most ``max_records`` records of each partition, its first: the next step probes
        from where these end, so a backlog is applied in bounded batches.
        """
        raw = table_reader(table).raw_events(self.spark, table, [read.location()])
        partition = kafka.partition_of(F.col(SOURCE_FILE))
        first = F.min(ROW_ID).over(Window.partitionBy(partition))
        raw = raw.withColumn("_first", first).where(
            F.col(ROW_ID) < F.col("_first") + self.max_records
        )
        # The commit's date in the table's time zone (no session time zone involved).
        committed = kafka.commit_date(table, F.col(EVENT_TIME_RAW))
        today = date_in_zone(dt.datetime.now(dt.UTC), table.time_zone)
        rows = (
            raw.groupBy(
                kafka.partition_of(F.col(SOURCE_FILE)).alias("partition"),
                F.coalesce(committed.cast("string"), F.lit(today)).alias("business_date"),
            )
            .agg(F.max(ROW_ID).alias("offset"))
            .collect()
        )
        return [(row["partition"], row["business_date"], row["offset"]) for row in rows]

    def _turn(
        self, table: TableConfig, latest: DateVersion | None, date: str, files: list[str]
    ) -> bool:
        """One micro-batch of ``date`` in the writer's turn; whether it succeeded.

        The open date is closed first when ``date`` is later; a failure pauses the table.
        """
        with self.turn(), table_locks(self.spark, [table.name]):
            if latest is not None and latest.is_open and date > latest.business_date:
                closed = self._close(table, latest.business_date)
                if closed.status in audit.FAILED_STATUSES:
                    self._fail(table, closed)
                    return False
            applied = self._apply(table, date, files)
        self.print(applied.line())
        if applied.status in audit.FAILED_STATUSES:
            self._fail(table, applied)
            return False
        return True

    def _close_when_over(self, table: TableConfig) -> None:
        """Close the open date once ``close_after`` minutes have passed since its end.

        A late event of the date that comes after this applies to it again (it opens
        again) and a step within a minute closes it again, as a replay would. Not while a
        topic's broker is away (the close reads the topic).
        """
        if self.close_after is None or table.name in self.unreachable:
            return  # a topic's broker away: the close would read the topic
        # A date ends once a day: a look a minute is enough (the first at once).
        now = time.monotonic()
        if now - self.close_looked.get(table.name, -math.inf) < 60:
            return
        self.close_looked[table.name] = now
        latest = self._latest(table)
        if latest is None or not latest.is_open:
            return
        end_ms = date_bounds_ms(latest.business_date, table.time_zone)[1]
        if time.time() * 1000 < end_ms + self.close_after * 60_000:
            return
        with self.turn(), table_locks(self.spark, [table.name]):
            closed = self._close(table, latest.business_date)
        if closed.status in audit.FAILED_STATUSES:
            self._fail(table, closed)

    def _fail(self, table: TableConfig, batch: Batch) -> None:
        self.failed[table.name] = batch.error or batch.status
        self.print(
            f"hashcdc stream: {table.name} paused at {batch.business_date} (the other tables go "
            "on); fix the cause and start the stream again"
        )

    def _latest(self, table: TableConfig) -> DateVersion | None:
        state = table.relations.in_schema(self.schema).state
        if not self.spark.catalog.tableExists(state):
            return None
        applied = applied_versions(self.spark, state)
        return applied[-1] if applied else None

    def _apply(self, table: TableConfig, date: str, files: list[str]) -> Batch:
        """One micro-batch: the table's stage and states (and its views, the first time).

        ``files``: the date's files to read (new or changed since this stream read them);
        empty: all of them.
        """
        names = Relations(table.name)
        pairs = [(names.state, names.current)]
        if table.sensitive_columns:
            pairs.append((names.sensitive_state, names.sensitive_current))
        nodes = [names.stage]
        for state, current in pairs:
            nodes.append(state)
            if not self.spark.catalog.tableExists(f"{self.schema}.{current}"):
                nodes.append(current)
        variables = ["--vars", json.dumps({MICRO_BATCH_VAR: files or True})]
        return self._invoke("run", table, date, ["--select", *nodes, *variables])

    def _close(self, table: TableConfig, date: str) -> Batch:
        """The open date as a whole: its tags and counts, history, tests and audit."""
        batch = self._invoke("build", table, date, table_selector([table.name]))
        self.print(batch.line(closing=True))
        return batch

    def _invoke(self, command: str, table: TableConfig, date: str, select: list[str]) -> Batch:
        args = [*self.extra, *select, "--log-path", str(self.log_dir), "--quiet"]
        result = invoke_dbt(dbt_args(command, self.project_dir, args), date)
        rows = audit.invocation_rows(
            self.spark, audit.audit_table(self.project_dir), [get_invocation_id()]
        )
        if rows:
            return _batch_of(rows[0].asDict())
        if result.success:
            return Batch(table.name, date, "success", 0, {}, 0.0, None, None)
        return Batch(table.name, date, "error", 0, {}, 0.0, None, _first_error(result))


def _first_error(result: Any) -> str:
    """The first failed node's message of a dbt result (its first line)."""
    for node in getattr(result.result, "results", None) or []:
        if str(node.status) in ("error", "fail") and node.message:
            return f"{node.node.name}: {str(node.message).strip().splitlines()[0]}"
    if result.exception is not None:
        return str(result.exception).strip().splitlines()[0]
    return "dbt failed (see the log)"
