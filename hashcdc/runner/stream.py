"""``hashcdc stream``: change feeds applied to their state as their events land.

The stream watches each selected change feed where its transport says its events land
(:mod:`hashcdc.pipeline.transports`: the landing folders of ``source.path``, one per
business date, where ``hashcdc capture`` lands a table's events by their commit date; or
a Kafka topic), through the transport's :class:`~hashcdc.pipeline.transports.Watch`.
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
import functools
import json
import math
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hashcdc.config import TableConfig, duration_seconds
from hashcdc.dates import date_bounds_ms
from hashcdc.errors import is_transient, telling_line
from hashcdc.groups import outcomes
from hashcdc.groups.members import stages_of
from hashcdc.pipeline.inputs import table_reader
from hashcdc.pipeline.transports import StreamLimits, StreamRead, Watch, transport_of
from hashcdc.relations import Relations
from hashcdc.runner.invocation import invoke_and_audit
from hashcdc.runtime.lock import table_locks
from hashcdc.runtime.project import MICRO_BATCH_VAR, RETRIES_VAR, table_selector
from hashcdc.runtime.retry import RETRY_FOR_DEFAULT, Retries
from hashcdc.state import audit, failures
from hashcdc.state.versions import (
    DateVersion,
    applied_versions,
    member_applied_versions,
    relation_names,
)


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


@dataclass(frozen=True)
class Streamed:
    """What the stream applies in one micro-batch: a change feed, or a table group's feeds.

    A group's micro-batch applies the events of every member that has new ones, in one
    dbt invocation and one commit of the group's state; the members without new events
    are held back from it (:func:`hashcdc.groups.outcomes.holding`).
    """

    name: str
    members: tuple[TableConfig, ...]
    is_group: bool = False

    @property
    def relations(self) -> Relations:
        """The state's (and stage's) relations: the table's, or the group's."""
        return Relations(self.name)


def streamed_units(tables: list[TableConfig]) -> list[Streamed]:
    """The feeds as the stream applies them: each table of its own, each group's together."""
    groups: dict[str, list[TableConfig]] = {}
    units: list[Streamed] = []
    for table in tables:
        if table.group is None:
            units.append(Streamed(table.name, (table,)))
        else:
            groups.setdefault(table.group, []).append(table)
    units += [Streamed(name, tuple(members), True) for name, members in sorted(groups.items())]
    return units


@dataclass
class Stream:
    """The stream of some change-feed tables in one Spark session.

    ``turn`` gives each step the writer's turn (the engine's, :func:`writer_turn`);
    ``stopping`` says when to stop, checked between steps. ``configs``: every table of
    the project (a group's members not streamed are held back from its micro-batches).
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
    configs: list[TableConfig] = field(default_factory=list)
    # Bounded micro-batches, whatever the backlog (a stream started after a long stop): at
    # most this many landed files, or records of a topic, a batch; the rest in later ones.
    max_files: int = 100
    max_records: int = 1_000_000
    # Minutes after an open date's end (the table's zone) when the stream closes it itself;
    # None: when a later date's first events come (or a user's `hashcdc run --date`).
    close_after: float | None = None
    # When each unit's open date was last looked at for --close-after (monotonic seconds).
    close_looked: dict[str, float] = field(default_factory=dict)
    # Each table's watch of its transport: what it has read of the landing or the topic.
    watches: dict[str, Watch] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    # How long a table without `retry_for` is retried (the project's var).
    retry_for: str = RETRY_FOR_DEFAULT
    # Each unit's transient failures since its last success, and when it is tried again.
    retries: dict[str, Retries] = field(default_factory=dict)
    resume_at: dict[str, float] = field(default_factory=dict)
    # Retries ridden through that no audit row has counted yet (the next batch's does).
    unrecorded: dict[str, int] = field(default_factory=dict)
    # The units a failure met in their current attempt.
    troubled: set[str] = field(default_factory=set)

    def run(self, interval: float, once: bool = False) -> int:
        """Apply what lands until stopped (``once``: what has landed, then return)."""
        self.print(
            f"hashcdc stream: {', '.join(t.name for t in self.tables)}; watching their landing "
            f"folders and topics every {interval:g} s"
            + (" (once)" if once else " (SIGTERM or Ctrl-C stops)")
        )
        units = streamed_units(self.tables)
        while not self.stopping():
            for unit in units:
                if unit.name not in self.failed and not self.stopping() and self._due(unit):
                    self.attempt(unit)
            # --once: what has landed, its transient failures retried until their time is up.
            if (once and not self.resume_at) or len(self.failed) == len(units):
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

    def _due(self, unit: Streamed) -> bool:
        """Whether a unit's pause after a transient failure is over (or it had none)."""
        return time.monotonic() >= self.resume_at.get(unit.name, 0.0)

    def _retries(self, unit: Streamed) -> Retries:
        """The unit's retries: for its members' shortest ``retry_for`` (else the project's)."""
        if unit.name not in self.retries:
            seconds = min(duration_seconds(m.retry_for or self.retry_for) for m in unit.members)
            self.retries[unit.name] = Retries(seconds)
        return self.retries[unit.name]

    def attempt(self, unit: Streamed) -> None:
        """A step of the unit; a failure retried with backoff, or the unit paused.

        A failure that may pass by itself (:func:`hashcdc.errors.is_transient`: a broker
        away, a busy metastore, a concurrent commit) is retried until the unit's
        ``retry_for`` runs out; any other pauses the unit at once.
        """
        self.troubled.discard(unit.name)
        try:
            self.step(unit)
        except Exception as exc:  # noqa: BLE001 - named in the stream's line, retried or paused
            self._trouble(unit, None, telling_line(exc), is_transient(str(exc)))
            return
        away = [w.problem for m in unit.members if (w := self.watches.get(m.name)) and w.problem]
        if away:
            self._trouble(unit, None, away[0], True)
        elif unit.name not in self.troubled:
            # Through without a failure: what it rode through goes into its next batch's row.
            self.resume_at.pop(unit.name, None)
            failures.clear_stop(self.project_dir, unit.name)
            retried = self._retries(unit).succeeded()
            self.unrecorded[unit.name] = self.unrecorded.get(unit.name, 0) + retried

    def _trouble(self, unit: Streamed, date: str | None, reason: str, transient: bool) -> None:
        """A failure: retried after a pause when it may pass and time is left, else a pause."""
        self.troubled.add(unit.name)
        retries = self._retries(unit)
        said = retries.reason
        pause = retries.failed(reason) if transient else None
        what = f"group {unit.name} (its tables)" if unit.is_group else unit.name
        if pause is not None:
            self.resume_at[unit.name] = time.monotonic() + pause
            if reason != said:  # said once, and again when the cause changes
                self.print(
                    f"hashcdc stream: {what}: {reason}; retrying with backoff for up to "
                    f"{retries.seconds:.0f} s"
                )
            return
        self.resume_at.pop(unit.name, None)
        self.failed[unit.name] = reason
        latest = None if date is not None else self._latest_or_none(unit)
        date = date or (latest.business_date if latest is not None else None)
        gave_up = (
            f"; gave up after {retries.count - 1} retries over {retries.lasted:.0f} s "
            f"(retry_for {retries.seconds:.0f} s)"
            if retries.count > 1
            else ""
        )
        self.print(
            f"hashcdc stream: {what} paused at {date or 'its first date'}: {reason}{gave_up} "
            "(the other tables go on); fix the cause and start the stream again"
        )
        stamp = dt.datetime.now().isoformat(timespec="seconds")
        stop = failures.Stop([m.name for m in unit.members], date, reason, stamp, retries.total)
        failures.record_stop(self.project_dir, unit.name, stop)

    def _latest_or_none(self, unit: Streamed) -> DateVersion | None:
        """The unit's latest date, or None when the metastore does not say."""
        try:
            return self._latest(unit)
        except Exception:  # noqa: BLE001 - the metastore away: the stop names no date
            return None

    def step(self, unit: Streamed) -> None:
        """Apply what landed since this stream last looked; close the open date when due.

        Each member's watch offers its reads in order; the earliest date among the next
        read of each is applied as one micro-batch of the members that have one.
        """
        self._gathered(unit)
        # A group's dates move as one: its members' reads are weighed against its latest,
        # read once for all the members a pass asks (only a batch moves it).
        latest = functools.cache(lambda: self._latest(unit))
        pending = {m.name: self._watch(m).reads(latest) for m in unit.members}
        heads: dict[str, StreamRead] = {}
        while not self.stopping():
            for name in [n for n in pending if n not in heads]:
                read = next(pending[name], None)
                if read is None:
                    del pending[name]
                else:
                    heads[name] = read
            if not heads:
                break
            date = min(read.business_date for read in heads.values())
            batch = {name: read for name, read in heads.items() if read.business_date == date}
            if not self._turn(unit, date, batch):
                return
            latest.cache_clear()
            for name, read in batch.items():
                read.done()
                del heads[name]
        if unit.name not in self.failed and not self.stopping():
            self._close_when_over(unit)

    def _watch(self, table: TableConfig) -> Watch:
        """The table's watch of its transport (made on the first step)."""
        if table.name not in self.watches:
            limits = StreamLimits(
                self.max_files,
                self.max_records,
                self.print,
                lambda spark, read, locations: table_reader(read).raw_events(
                    spark, read, locations
                ),
            )
            transport = transport_of(table)
            self.watches[table.name] = transport.watch(self.spark, table, self.project_dir, limits)
        return self.watches[table.name]

    def _gathered(self, unit: Streamed) -> None:
        """A group's watches, gathered by their transport (a group's topics look together)."""
        if len(unit.members) > 1:
            transport_of(unit.members[0]).gather([self._watch(m) for m in unit.members])

    def _turn(self, unit: Streamed, date: str, batch: dict[str, StreamRead]) -> bool:
        """One micro-batch (the ``batch`` members' reads) in the writer's turn; whether it went.

        The open date is closed first when the batch's date is later; a failure pauses the
        table (a group: all its members).
        """
        files = [location for read in batch.values() for location in read.locations]
        with self.turn(), table_locks(self.spark, [m.name for m in unit.members], unit.members):
            latest = self._latest(unit)
            if latest is not None and latest.is_open and date > latest.business_date:
                closed = self._close(unit, latest.business_date)
                if any(b.status in audit.FAILED_STATUSES for b in closed):
                    self._fail(unit, closed)
                    return False
            applied = self._apply(unit, date, files, list(batch))
        for line in applied:
            self.print(line.line())
        if any(b.status in audit.FAILED_STATUSES for b in applied):
            self._fail(unit, applied)
            return False
        self._applied(unit)
        return True

    def _close_when_over(self, unit: Streamed) -> None:
        """Close the open date once ``close_after`` minutes have passed since its end.

        A late event of the date that comes after this applies to it again (it opens
        again) and a step within a minute closes it again, as a replay would. Not while a
        topic's broker is away (the close reads the topic).
        """
        if self.close_after is None or any(self._watch(m).away for m in unit.members):
            return  # a topic's broker away: the close would read the topic
        # A date ends once a day: a look a minute is enough (the first at once).
        now = time.monotonic()
        if now - self.close_looked.get(unit.name, -math.inf) < 60:
            return
        self.close_looked[unit.name] = now
        latest = self._latest(unit)
        if latest is None or not latest.is_open:
            return
        end_ms = date_bounds_ms(latest.business_date, unit.members[0].time_zone)[1]
        if time.time() * 1000 < end_ms + self.close_after * 60_000:
            return
        with self.turn(), table_locks(self.spark, [m.name for m in unit.members], unit.members):
            closed = self._close(unit, latest.business_date)
        if any(b.status in audit.FAILED_STATUSES for b in closed):
            self._fail(unit, closed)

    def _fail(self, unit: Streamed, batches: list[Batch]) -> None:
        failed = [b for b in batches if b.status in audit.FAILED_STATUSES]
        reason = "; ".join(b.error or b.status for b in failed)
        self._trouble(unit, failed[0].business_date, reason, is_transient(reason))

    def _applied(self, unit: Streamed) -> None:
        """A batch of the unit applied: its audit rows counted its retries."""
        self._retries(unit).succeeded()
        self.unrecorded[unit.name] = 0

    def _retried(self, unit: Streamed) -> int:
        """The retries the unit's next audit rows count."""
        return self.unrecorded.get(unit.name, 0) + self._retries(unit).count

    def _latest(self, unit: Streamed) -> DateVersion | None:
        """The latest date the state holds (a group's: of any of its members)."""
        state = unit.relations.in_schema(self.schema).state
        if not self.spark.catalog.tableExists(state):
            return None
        applied = applied_versions(self.spark, state)
        return applied[-1] if applied else None

    def _open_members(self, unit: Streamed, date: str) -> list[str]:
        """The members of a group whose ``date`` the stream left open (they close it)."""
        state = unit.relations.in_schema(self.schema).state
        names = [m.name for m in unit.members]
        held = member_applied_versions(self.spark, state, names)
        return [
            name
            for name in names
            if held[name] and held[name][-1].business_date == date and held[name][-1].is_open
        ]

    def _apply(
        self, unit: Streamed, date: str, files: list[str], members: list[str]
    ) -> list[Batch]:
        """One micro-batch: the stage and states (and the views, the first time).

        ``files``: the date's files to read (new or changed since this stream read them);
        empty: all of them. ``members``: a group's members whose events the batch applies.
        """
        names = unit.relations
        pairs = [(names.state, names.current)]
        if any(m.sensitive_columns for m in unit.members):
            pairs.append((names.sensitive_state, names.sensitive_current))
        existing = relation_names(self.spark, self.schema)
        nodes = [names.stage]
        for state, current in pairs:
            nodes.append(state)
            if current.lower() not in existing:
                nodes.append(current)
        if unit.is_group:
            views = [m.relations.current for m in unit.members]
            views += [m.relations.sensitive_current for m in unit.members if m.sensitive_columns]
            nodes += [v for v in views if v.lower() not in existing]
        variables = [
            "--vars",
            json.dumps({MICRO_BATCH_VAR: files or True, RETRIES_VAR: self._retried(unit)}),
        ]
        return self._invoke("run", unit, date, ["--select", *nodes, *variables], members)

    def _close(self, unit: Streamed, date: str) -> list[Batch]:
        """The open date as a whole: its tags and counts, history, tests and audit.

        A group's members the stream applied nothing of on the date are held back (no
        events of theirs landed for it).
        """
        members = self._open_members(unit, date) if unit.is_group else [unit.name]
        selector = table_selector([m.name for m in unit.members], stages_of(unit.members))
        variables = ["--vars", json.dumps({RETRIES_VAR: self._retried(unit)})]
        batches = self._invoke("build", unit, date, [*selector, *variables], members)
        for batch in batches:
            self.print(batch.line(closing=True))
        return batches

    def _invoke(
        self, command: str, unit: Streamed, date: str, select: list[str], members: list[str]
    ) -> list[Batch]:
        args = [*self.extra, *select, "--log-path", str(self.log_dir), "--quiet"]
        held = [m.name for m in self._group_tables(unit) if m.name not in members]
        with outcomes.holding(held):
            done = invoke_and_audit(self.spark, self.project_dir, command, args, date)
        if done.rows:
            return [_batch_of(row.asDict()) for row in done.rows]
        if done.success:
            return [Batch(unit.name, date, "success", 0, {}, 0.0, None, None)]
        return [Batch(unit.name, date, "error", 0, {}, 0.0, None, done.first_error())]

    def _group_tables(self, unit: Streamed) -> list[TableConfig]:
        """Every table of a group (those not streamed too); a table of its own: itself."""
        if not unit.is_group:
            return list(unit.members)
        return [t for t in self.configs or unit.members if t.group == unit.name]
