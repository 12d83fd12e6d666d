"""What every ``hashcdc capture`` shares, whatever the database: the loop around a session.

A capture is one process reading one database's log for a group of tables (one slot: the
name of its offsets and, for PostgreSQL, of its replication slot). The database's
subclass opens a *session* (prerequisites, the first snapshot, streaming); this class
retries a lost server until a deadline, stops on a signal or a limit (``--once``,
``--until``), lands events at transaction ends (:mod:`hashcdc.capture.landing`) and keeps
the offsets, the commit point every restart resumes from.
"""

from __future__ import annotations

import datetime as dt
import glob
import itertools
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from hashcdc.capture.group import CaptureGroup, qualified_name
from hashcdc.capture.landing import (
    CONTROL_SUFFIX,
    FILE_SUFFIX,
    PART_PREFIX,
    SCHEMA_TAG,
    Landing,
    Offsets,
    held_files,
    held_folder,
    landed_position,
    landing_folder,
    paused_tables,
    release,
    write_atomically,
)
from hashcdc.config import TableConfig
from hashcdc.dates import date_in_zone
from hashcdc.errors import HashcdcError
from hashcdc.pipeline.evolution.schema_changes import (
    SCHEMA_FILE_PREFIX,
    TABLE_RENAMED,
    SourceColumn,
    column_changes,
    describe_change,
    schema_change_event,
)
from hashcdc.runtime.retry import Retries

# The name of the empty file that says a date had no change for a table.
QUIET_NAME = "no-changes"


class CaptureError(HashcdcError):
    """Capture cannot go on; the message says why and what to do."""


class ConnectionLostError(HashcdcError):
    """The server went away or refused a connection: retried until the deadline."""


def first_line(error: Exception) -> str:
    """An error's first line (drivers add context lines after it)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


@dataclass(frozen=True)
class CaptureOptions:
    """How long to capture and how to land (``hashcdc capture``'s flags)."""

    state_dir: Path
    once: bool = False
    until_position: int | None = None
    until_time: dt.datetime | None = None
    roll_bytes: int = 64 * 2**20
    roll_seconds: float = 60.0
    retry_seconds: float = 300.0
    # Every event into this business date (batch use: `capture --once --date D`, then
    # `run --date D`); None: each transaction into the date it committed on (tables' zone).
    business_date: str | None = None


class LogCapture:
    """One capture process: snapshot once, then stream until told to stop."""

    connector: ClassVar[str]

    def __init__(self, group: CaptureGroup, options: CaptureOptions, project_dir: Path):
        self.group = group
        self.options = options
        self.project_dir = project_dir
        self.offsets = Offsets.load(options.state_dir / f"{group.slot}.json", group.slot)
        self.landing = Landing(group.slot, project_dir, options.state_dir)
        self.control = options.state_dir / f"{group.slot}{CONTROL_SUFFIX}"
        self._control_seen: float | None = None
        self.signalled = False
        self.streaming = False
        # --once: the log's end when the command started.
        self.target_position: int | None = None
        # Shapes seen in the log but not landed yet (table name -> columns): saved in the
        # offsets with the roll that lands their schema-change events.
        self.pending_shapes: dict[str, list[SourceColumn]] = {}
        # The last transaction read but not landed yet (its commit position and time):
        # the offsets take it only with the roll that lands its events.
        self.unlanded: tuple[int, dt.datetime] | None = None

    def print(self, message: str) -> None:
        """A progress line (never a credential: connection settings are not printed)."""
        print(f"hashcdc capture {self.group.slot}: {message}", flush=True)

    def position_text(self, position: int) -> str:
        """A position as the database writes it."""
        return str(position)

    # What a database's capture provides ------------------------------------------

    def session(self) -> None:
        """Connect, check, snapshot if not done, stream; raise ConnectionLostError if lost."""
        raise NotImplementedError

    def confirm(self) -> None:
        """Tell the server the landed position (it may then recycle the log before it)."""

    # The loop with retries ---------------------------------------------------------

    def run(self) -> int:
        """Capture until a stop condition; retry a lost server until the deadline."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        retries = Retries(self.options.retry_seconds)
        while True:
            self.streaming = False
            try:
                self.apply_control()
                self.session()
                self.land_quiet_date()
                return 0
            except ConnectionLostError as exc:
                self.back_to_landed()
                self.note_failure(f"{exc}; streamed again from the landed position")
                if self.streaming:  # it streamed since the last loss: a new run of failures
                    retries.succeeded()
                pause = retries.failed(str(exc))
                if pause is None:
                    self.fail(
                        f"{exc}; gave up after {retries.lasted:.0f} s of retries "
                        f"(--retry-seconds {self.options.retry_seconds:.0f}). Nothing is lost: "
                        "start `hashcdc capture` again once the server is back"
                    )
                self.print(f"{exc}; retrying in {pause:.0f} s")
                time.sleep(pause or 0.0)

    def back_to_landed(self) -> None:
        """Drop what was read but not landed, and every in-memory trace of it.

        The invariant: in memory, the offsets are those saved (the last roll's), so a
        new session resumes from what is landed and skips only transactions at or before
        the landed commit point. Unlanded parts go; the offsets are read back from their
        file (a table's shape or new name seen since the roll goes with them).
        """
        self.landing.discard()
        self.pending_shapes.clear()
        self.unlanded = None
        self.offsets = Offsets.load(self.offsets.path, self.group.slot)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signalled = True

    def require(self, problems: list[str]) -> None:
        """Stop before reading anything when a prerequisite is missing.

        A table the log showed renamed, whose config still names it as before, is named
        with its new name (its "does not exist" is that rename).
        """
        if not problems:
            return
        for table in self.group.tables:
            progress = self.offsets.tables.get(table.name)
            if progress and progress.source.lower() != qualified_name(table).lower():
                problems = [
                    *problems,
                    f"table '{table.name}': the log showed {qualified_name(table)} renamed to "
                    f"{progress.source}: set source.database.table: "
                    f"{progress.source.split('.', 1)[1]} in {table.config_file} (capture goes "
                    "on from where it stopped)",
                ]
        self.fail("; ".join(problems))

    def fail(self, message: str) -> None:
        """Record the failure in the offsets and stop with it."""
        self.note_failure(message)
        raise CaptureError(f"capture {self.group.slot}: {message}")

    def note_failure(self, message: str) -> None:
        """Keep a failure (with its time, UTC) in the offsets: ``hashcdc status`` shows it."""
        moment = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.offsets.failures = [*self.offsets.failures[-4:], f"{moment} {message}"]
        self.offsets.failure_count += 1
        self.offsets.save()

    # The snapshot -------------------------------------------------------------------

    def day(self, commit_time: dt.datetime | None = None) -> str:
        """The business date of a transaction.

        ``--date``, else its commit's date in the tables' time zone (``changes.time_zone``).
        """
        moment = commit_time or dt.datetime.now(dt.UTC)
        return self.options.business_date or date_in_zone(moment, self.group.time_zone)

    def begin_snapshot(self, position: int) -> str:
        """Record that the snapshot at ``position`` is being read; its business date."""
        offsets = self.offsets
        offsets.snapshot, offsets.snapshot_lsn = "running", position
        offsets.snapshot_date, offsets.snapshot_files = self.day(), []
        offsets.save()
        return offsets.snapshot_date

    def land_snapshot_table(
        self, table: TableConfig, rows: int, columns: list[SourceColumn] | None = None
    ) -> None:
        """Land one table's snapshot events (the snapshot is not committed yet).

        ``columns``: the table's shape in the snapshot, which later changes are compared to.
        """
        landed = self.landing.land(f"snapshot-{self.offsets.snapshot_lsn:016X}")
        self.offsets.snapshot_files += [str(path) for _, path, _ in landed]
        progress = self.offsets.progress(table, qualified_name(table))
        progress.events += rows
        progress.files += len(landed)
        if columns is not None:
            progress.columns = [list(column) for column in columns]
        self.offsets.save()
        self.print(f"table '{table.name}': snapshot of {rows} rows landed")

    def end_snapshot(self, started: float) -> None:
        """Commit the snapshot: streaming starts at its position."""
        offsets = self.offsets
        offsets.snapshot = "done"
        offsets.position = offsets.commit_lsn = offsets.snapshot_lsn
        offsets.save()
        self.print(
            f"snapshot at {self.position_text(offsets.snapshot_lsn)} landed for "
            f"{offsets.snapshot_date} in {time.monotonic() - started:.1f} s; streaming from there"
        )

    def forget_unfinished_snapshot(self) -> None:
        """A snapshot that never finished: its landed files go (it is read again)."""
        for path in self.offsets.snapshot_files:
            Path(path).unlink(missing_ok=True)

    def remove_uncommitted(self) -> None:
        """Remove landed (or held) files past the offsets: a roll that did not commit.

        Their transactions are streamed again. So are those of a dead capture's part
        files (``_capturing-<slot>-<pid>``, left by a SIGKILL): they are removed too, so
        none stays for good, nor is opened again by a later process given the same pid.
        """
        open_parts = {Path(part.handle.name) for part in self.landing.parts.values()}
        for table in self.group.tables:
            pattern = str(Path(table.source.path_for("*")))
            if not Path(pattern).is_absolute():
                pattern = str(self.project_dir / pattern)
            held = held_folder(self.options.state_dir, self.group.slot, table.name)
            for folder, prefix in itertools.product(
                (pattern, f"{held}/*"), ("", SCHEMA_FILE_PREFIX)
            ):
                for found in glob.glob(f"{folder}/{prefix}{self.group.slot}-*{FILE_SUFFIX}"):
                    if not self._committed(Path(found)):
                        self.print(f"removing {found}: landed after the last saved offsets")
                        Path(found).unlink()
            for folder in (pattern, f"{held}/*"):
                for found in glob.glob(f"{folder}/{PART_PREFIX}{self.group.slot}-*{FILE_SUFFIX}"):
                    if Path(found) not in open_parts:
                        self.print(f"removing {found}: a part file no capture is writing")
                        Path(found).unlink(missing_ok=True)

    def _committed(self, path: Path) -> bool:
        position = landed_position(path, self.group.slot)
        return position is None or position <= self.offsets.commit_lsn

    def land_quiet_date(self) -> None:
        """Give each table with nothing landed for a date an empty file.

        The date then has an extract, and its run applies no change instead of stopping
        for a missing extract. With ``--date D``: D. As a service (no ``--date``): every
        day (in the tables' time zone) from the snapshot's, or the last one done, to today,
        checked at each roll; a day's events may still land beside its empty file. A paused
        table gets none (its events are held).
        """
        if self.options.business_date is not None:
            days = [self.options.business_date]
        else:
            today = dt.date.fromisoformat(self.day())  # in the tables' time zone
            done = self.offsets.quiet_through or self.offsets.snapshot_date
            if self.offsets.snapshot != "done" or done is None or done > today.isoformat():
                return
            first = dt.date.fromisoformat(done)
            if self.offsets.quiet_through is not None:
                first += dt.timedelta(days=1)
            days = [
                (first + dt.timedelta(days=n)).isoformat() for n in range((today - first).days + 1)
            ]
            self.offsets.quiet_through = today.isoformat()
        for day, table in itertools.product(days, self.group.tables):
            folder = landing_folder(table, day, self.project_dir)
            landed = [path for path in folder.glob(f"*{FILE_SUFFIX}") if path.name[0] not in "._"]
            if table.name not in self.landing.paused and not landed:
                write_atomically(folder / f"{self.group.slot}-{QUIET_NAME}{FILE_SUFFIX}", "")
                self.print(f"table '{table.name}': no change for {day}: an empty file landed")

    # Pause and resume -----------------------------------------------------------------

    def apply_control(self) -> None:
        """Take up ``hashcdc capture --pause/--resume`` (at a transaction boundary).

        A paused table's events are held from the next transaction on. A resumed table's
        held files are released into the landing folder of the current business date,
        only those the saved offsets commit (a later one is removed and streamed again).
        """
        try:
            seen = self.control.stat().st_mtime
        except FileNotFoundError:
            seen = None
        if seen == self._control_seen and self._control_seen is not None:
            return
        self._control_seen = seen
        paused = frozenset(paused_tables(self.control)) & {t.name for t in self.group.tables}
        for name in sorted(paused - self.landing.paused):
            self.print(f"table '{name}' paused: its events are held until it is resumed")
        self.landing.paused = paused
        for table in self.group.tables:
            if table.name in paused:
                continue
            held = [
                path
                for path in held_files(self.options.state_dir, self.group.slot, table.name)
                if self._committed(path)
            ]
            if held:
                day = self.day()
                release(held, landing_folder(table, day, self.project_dir))
                self.print(
                    f"table '{table.name}' resumed: {len(held)} held file(s) released into {day}"
                )

    # Streaming ----------------------------------------------------------------------

    def roll_due(self, last_roll: float) -> bool:
        """Whether the parts are old or big enough to land (at a transaction's end)."""
        if self.landing.bytes >= self.options.roll_bytes:
            return True
        return time.monotonic() - last_roll >= self.options.roll_seconds

    def past_until(self, commit_position: int, commit_time: dt.datetime) -> bool:
        """Whether a transaction is past ``--once``'s or ``--until``'s limit."""
        limits = (self.target_position, self.options.until_position)
        if any(limit is not None and commit_position >= limit for limit in limits):
            return True
        return self.options.until_time is not None and commit_time >= self.options.until_time

    def should_stop_idle(self, reached: int) -> bool:
        """With no transaction open: stop on a signal, or once the limit is reached."""
        if self.signalled:
            return True
        limits = (self.target_position, self.options.until_position)
        if any(limit is not None and reached >= limit for limit in limits):
            return True
        until = self.options.until_time
        return until is not None and dt.datetime.now(dt.UTC) >= until

    def committed(self, commit_position: int, commit_time: dt.datetime) -> None:
        """A transaction of the captured tables ended: it lands with the next roll."""
        self.unlanded = (commit_position, commit_time)

    def roll(self, end_position: int) -> None:
        """Land the parts, save the offsets, then confirm the position to the server."""
        if self.unlanded is not None:
            commit_position, commit_time = self.unlanded
            self.offsets.commit_lsn = commit_position
            self.offsets.commit_time = commit_time.isoformat()
            self.unlanded = None
        landed = self.landing.land(f"{self.offsets.commit_lsn:016X}")
        for table_name, columns in self.pending_shapes.items():
            self.offsets.tables[table_name].columns = [list(column) for column in columns]
        self.pending_shapes.clear()
        # Schema-change files commit with the events but are no events of their own.
        events = [entry for entry in landed if not entry[1].name.startswith(SCHEMA_FILE_PREFIX)]
        for table_name, _, count in events:
            progress = self.offsets.tables[table_name]
            progress.events += count
            progress.files += 1
            progress.last_commit_time = self.offsets.commit_time
        if landed or end_position > self.offsets.position:
            self.offsets.position = max(self.offsets.position, end_position)
            self.offsets.save()
            self.confirm()
        if events:
            self.print(
                f"landed {sum(e for _, _, e in events)} events in {len(events)} file(s) up to "
                f"{self.position_text(self.offsets.commit_lsn)}"
            )
        self.apply_control()
        if self.options.business_date is None and self.offsets.quiet_through != self.day():
            self.land_quiet_date()
            self.offsets.save()

    def shape_seen(
        self,
        table: TableConfig,
        source: dict[str, Any],
        columns: list[SourceColumn],
        keys: list[str],
        day: str,
        table_changes: tuple[dict[str, Any], ...] = (),
        ddl: str | None = None,
    ) -> None:
        """A source table's shape as the log shows it; a change lands as a schema-change event.

        ``columns`` are compared with the shape last landed (the offsets); ``table_changes``
        are changes of the table itself (renamed, dropped, created). The event lands with
        the transaction's other events, and the new shape is saved with their offsets.
        """
        table_id = (source.get("schema") or source["db"], source["table"])
        progress = self.offsets.progress(table, ".".join(table_id))
        known = self.pending_shapes.get(table.name)
        if known is None and progress.columns is not None:
            known = [(name, kind) for name, kind in progress.columns]
        changes = list(table_changes)
        if known is not None and columns:  # a dropped table has no columns to compare
            changes += column_changes(known, columns)
        if columns:
            self.pending_shapes[table.name] = list(columns)
        if not changes:
            return
        for change in changes:
            if change["change"] == TABLE_RENAMED:
                progress.source = change["to"]
        event = schema_change_event(source, table_id, columns, keys, changes, ddl)
        self.landing.append(table, day, event, SCHEMA_TAG)
        described = "; ".join(describe_change(change) for change in changes)
        progress.schema_changes = [*progress.schema_changes[-9:], described]
        self.print(f"table '{table.name}': {'.'.join(table_id)} changed shape: {described}")
