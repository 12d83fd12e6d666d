"""``hashcdc capture`` for PostgreSQL: a consistent snapshot, then the log through ``pgoutput``.

One capture reads one database through one logical replication slot and one publication
holding the selected tables (both made on the first start). The first start creates the
slot with an exported snapshot, reads every table in that snapshot (``r`` events at the
slot's consistent position) and lands it; streaming then starts at exactly that position,
so nothing is missed and nothing is read twice. Every change arrives in commit order as a
Debezium envelope (``op``, ``before``, ``after``, ``source`` with ``lsn``, ``commit_lsn``,
``txId``, ``ts_ms``), in the landing folder of its table and of its commit's date (UTC).

A position is confirmed to the server (the slot may then recycle the WAL before it) only
after the files holding it are durably landed and the offsets saved
(:mod:`hashcdc.capture.landing`). A lost connection is retried until a deadline; the
server then streams again from the confirmed position, and transactions at or before the
offsets are skipped.
"""

from __future__ import annotations

import datetime as dt
import glob
import select
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hashcdc.capture import pgoutput
from hashcdc.capture.envelope import envelope, epoch_ms, row_image
from hashcdc.capture.landing import FILE_SUFFIX, Landing, Offsets, landed_position
from hashcdc.capture.server import (
    CaptureError,
    CaptureGroup,
    ConnectionLostError,
    connect,
    first_line,
    prerequisite_problems,
    qualified_name,
    query,
)
from hashcdc.config import TableConfig

# How long to wait for the server between checks of the stop conditions.
_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class CaptureOptions:
    """How long to capture and how to land (``hashcdc capture``'s flags)."""

    state_dir: Path
    once: bool = False
    until_lsn: int | None = None
    until_time: dt.datetime | None = None
    roll_bytes: int = 64 * 2**20
    roll_seconds: float = 60.0
    retry_seconds: float = 300.0
    # Every event into this business date (batch use: `capture --once --date D`, then
    # `run --date D`); None: each transaction into the date (UTC) it committed on.
    business_date: str | None = None


class PostgresCapture:
    """One capture process: snapshot once, then stream until told to stop."""

    def __init__(self, group: CaptureGroup, options: CaptureOptions, project_dir: Path):
        self.group = group
        self.options = options
        self.project_dir = project_dir
        self.offsets = Offsets.load(options.state_dir / f"{group.slot}.json", group.slot)
        self.landing = Landing(group.slot, project_dir)
        self.signalled = False
        self.target_lsn: int | None = None
        self.relations: dict[int, pgoutput.Relation] = {}
        self.streaming = False

    def print(self, message: str) -> None:
        """A progress line (never a credential: the DSN is not printed)."""
        print(f"hashcdc capture {self.group.slot}: {message}", flush=True)

    # The loop with retries ---------------------------------------------------------

    def run(self) -> int:
        """Capture until a stop condition; retry a lost server until the deadline."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        lost_since: float | None = None
        attempt = 0
        while True:
            self.streaming = False
            try:
                self._session()
                return 0
            except ConnectionLostError as exc:
                self.landing.discard()
                now = time.monotonic()
                if self.streaming or lost_since is None:
                    lost_since, attempt = now, 0
                if now - lost_since > self.options.retry_seconds:
                    self._fail(
                        f"{exc}; gave up after {now - lost_since:.0f} s of retries "
                        f"(--retry-seconds {self.options.retry_seconds:.0f}). Nothing is lost: "
                        "start `hashcdc capture` again once the server is back"
                    )
                attempt += 1
                pause = min(2.0 ** (attempt - 1), 30.0)
                self.print(f"{exc}; retrying in {pause:.0f} s")
                time.sleep(pause)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signalled = True

    def _fail(self, message: str) -> None:
        self.offsets.failures = [*self.offsets.failures[-4:], message]
        self.offsets.save()
        raise CaptureError(f"capture {self.group.slot}: {message}")

    def _session(self) -> None:
        import psycopg2

        try:
            with connect(self.group) as connection:
                problems = prerequisite_problems(connection, self.group)
                if problems:
                    self._fail("; ".join(problems))
                self._ensure_publication(connection)
                if self.options.once:
                    self.target_lsn = pgoutput.lsn_number(
                        query(connection, "select pg_current_wal_lsn()::text")[0][0]
                    )
                slot = query(
                    connection,
                    "select active_pid from pg_replication_slots where slot_name = %s",
                    self.group.slot,
                )
                if slot and slot[0][0] is not None:
                    self._fail(
                        f"the replication slot {self.group.slot} is in use by the server's "
                        f"process {slot[0][0]} (another `hashcdc capture` of these tables?): "
                        "stop that one first; one capture per slot"
                    )
                if self.offsets.snapshot != "done":
                    if slot:
                        self.print(f"dropping slot {self.group.slot}: its snapshot never finished")
                        query(connection, "select pg_drop_replication_slot(%s)", self.group.slot)
                    self._remove_files(self.offsets.snapshot_files)
                elif not slot:
                    self._fail(
                        f"the replication slot {self.group.slot} is gone (dropped, or removed "
                        "for lagging too far): changes after "
                        f"{pgoutput.lsn_text(self.offsets.position)} may be lost. Re-snapshot: "
                        f"delete {self.offsets.path} and run `hashcdc capture` again, then "
                        "check the tables against the source (docs/capture.md)"
                    )
            with connect(self.group, replication=True) as replication:
                cursor = replication.cursor()
                if self.offsets.snapshot != "done":
                    self._snapshot(cursor)
                self._remove_uncommitted()
                self._stream(cursor)
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
            raise ConnectionLostError(f"lost the server: {first_line(exc)}") from None

    def _ensure_publication(self, connection: Any) -> None:
        names = [qualified_name(table) for table in self.group.tables]
        published = {
            f"{schema}.{name}"
            for schema, name in query(
                connection,
                "select schemaname, tablename from pg_publication_tables where pubname = %s",
                self.group.publication,
            )
        }
        exists = query(
            connection, "select 1 from pg_publication where pubname = %s", self.group.publication
        )
        if not exists:
            query(
                connection,
                f'create publication "{self.group.publication}" for table {", ".join(names)}',
            )
            return
        missing = [name for name in names if name not in published]
        if missing:
            self._fail(
                f"the publication {self.group.publication} does not hold {', '.join(missing)}: "
                "a table added to a running capture needs its own snapshot. Give it a "
                "capture of its own (source.database.slot) or re-snapshot (docs/capture.md)"
            )

    # The snapshot -------------------------------------------------------------------

    def _snapshot(self, replication_cursor: Any) -> None:
        replication_cursor.execute(
            f'CREATE_REPLICATION_SLOT "{self.group.slot}" LOGICAL pgoutput EXPORT_SNAPSHOT'
        )
        _, consistent_point, snapshot_name, _ = replication_cursor.fetchone()
        lsn = pgoutput.lsn_number(consistent_point)
        today = self.options.business_date or dt.datetime.now(dt.timezone.utc).date().isoformat()
        offsets = self.offsets
        offsets.snapshot, offsets.snapshot_lsn, offsets.snapshot_date = "running", lsn, today
        offsets.snapshot_files = []
        offsets.save()
        started = time.monotonic()
        with connect(self.group) as connection:
            connection.autocommit = False
            with connection.cursor() as cursor:
                cursor.execute("set transaction isolation level repeatable read")
                cursor.execute("set transaction snapshot %s", (snapshot_name,))
            for table in self.group.tables:
                rows = self._snapshot_table(connection, table, lsn, today)
                landed = self.landing.land(f"snapshot-{lsn:016X}")
                for _, path, _ in landed:
                    offsets.snapshot_files.append(str(path))
                progress = offsets.progress(table, qualified_name(table))
                progress.events += rows
                progress.files += len(landed)
                offsets.save()
                self.print(f"table '{table.name}': snapshot of {rows} rows landed")
            connection.rollback()
        offsets.snapshot, offsets.position, offsets.commit_lsn = "done", lsn, lsn
        offsets.save()
        self.print(
            f"snapshot at {consistent_point} landed for {today} in "
            f"{time.monotonic() - started:.1f} s; streaming from there"
        )

    def _snapshot_table(self, connection: Any, table: TableConfig, lsn: int, day: str) -> int:
        schema, name = qualified_name(table).split(".", 1)
        columns = query(
            connection,
            "select a.attname, a.atttypid, coalesce(a.attnum = any(i.indkey), false) from "
            "pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on "
            "n.oid = c.relnamespace left join pg_index i on i.indrelid = c.oid and "
            "i.indisprimary where n.nspname = %s and c.relname = %s and a.attnum > 0 and "
            "not a.attisdropped order by a.attnum",
            schema,
            name,
        )
        relation = pgoutput.Relation(0, schema, name, "d")
        relation.columns = [pgoutput.Column(c, oid, key) for c, oid, key in columns]
        selected = ", ".join(f'"{c}"::text' for c, _, _ in columns)
        source = {"ts_ms": int(time.time() * 1000), "snapshot": "true", "lsn": lsn}
        source["commit_lsn"] = lsn
        rows = 0
        with connection.cursor(name=f"hashcdc_snapshot_{table.name}") as cursor:
            cursor.itersize = table.source.database.fetch_size if table.source.database else 10_000
            cursor.execute(f'select {selected} from "{schema}"."{name}"')
            for values in cursor:
                after = row_image(relation, tuple(values))
                self.landing.append(
                    table, day, envelope(self.group, relation, "r", None, after, source)
                )
                rows += 1
        return rows

    def _remove_files(self, paths: list[str]) -> None:
        for path in paths:
            Path(path).unlink(missing_ok=True)

    def _remove_uncommitted(self) -> None:
        """Landed files past the offsets: a roll that did not commit; streamed again."""
        for table in self.group.tables:
            pattern = str(Path(table.source.path_for("*")))
            if not Path(pattern).is_absolute():
                pattern = str(self.project_dir / pattern)
            for found in glob.glob(f"{pattern}/{self.group.slot}-*{FILE_SUFFIX}"):
                position = landed_position(Path(found), self.group.slot)
                if position is not None and position > self.offsets.commit_lsn:
                    self.print(f"removing {found}: landed after the last saved offsets")
                    Path(found).unlink()

    # Streaming ----------------------------------------------------------------------

    def _stream(self, cursor: Any) -> None:
        cursor.start_replication(
            slot_name=self.group.slot,
            decode=False,
            start_lsn=self.offsets.position,
            options={"proto_version": "1", "publication_names": self.group.publication},
            status_interval=10,
        )
        self.streaming = True
        self.print(f"streaming from {pgoutput.lsn_text(self.offsets.position)}")
        transaction: pgoutput.Begin | None = None
        skipping = False
        last_roll = time.monotonic()
        last_seen_end = self.offsets.position
        while True:
            message = self._read(cursor)
            if message is None:
                if transaction is None:
                    if self._should_stop(cursor, idle=True):
                        break
                    if self._roll_due(last_roll):
                        self._roll(cursor, last_seen_end)
                        last_roll = time.monotonic()
                    elif not self.landing.pending and cursor.wal_end > self.offsets.position:
                        # Nothing of ours is pending: let the server recycle what it skipped.
                        cursor.send_feedback(flush_lsn=self.offsets.position)
                ready = select.select([cursor], [], [], _POLL_SECONDS)[0]
                if not ready and transaction is None:
                    cursor.send_feedback(reply=True)
                continue
            decoded = pgoutput.decode(message.payload)
            if isinstance(decoded, pgoutput.Begin):
                if self._past_until(decoded):
                    break
                transaction, skipping = decoded, decoded.final_lsn <= self.offsets.commit_lsn
            elif isinstance(decoded, pgoutput.Relation):
                self._relation(decoded)
            elif isinstance(decoded, pgoutput.Commit):
                transaction = None
                if not skipping:
                    self.offsets.commit_lsn = decoded.commit_lsn
                    self.offsets.commit_time = decoded.commit_time.isoformat()
                last_seen_end = max(last_seen_end, decoded.end_lsn)
                if self.landing.bytes >= self.options.roll_bytes or self._roll_due(last_roll):
                    self._roll(cursor, last_seen_end)
                    last_roll = time.monotonic()
                if self.signalled:
                    break
            elif transaction is not None and not skipping:
                self._change(decoded, transaction, message.data_start)
        self._roll(cursor, last_seen_end)
        self.print(f"stopped at {pgoutput.lsn_text(self.offsets.position)}")

    @staticmethod
    def _read(cursor: Any) -> Any:
        """The next message; any error of the stream itself is a lost server (retried)."""
        import psycopg2

        try:
            return cursor.read_message()
        except psycopg2.DatabaseError as exc:
            raise ConnectionLostError(f"lost the server: {first_line(exc)}") from None

    def _roll_due(self, last_roll: float) -> bool:
        return time.monotonic() - last_roll >= self.options.roll_seconds

    def _past_until(self, begin: pgoutput.Begin) -> bool:
        options = self.options
        if self.target_lsn is not None and begin.final_lsn >= self.target_lsn:
            return True
        if options.until_lsn is not None and begin.final_lsn >= options.until_lsn:
            return True
        return options.until_time is not None and begin.commit_time >= options.until_time

    def _should_stop(self, cursor: Any, idle: bool) -> bool:
        if self.signalled:
            return True
        options = self.options
        reached = max(cursor.wal_end, self.offsets.position)
        if self.target_lsn is not None and reached >= self.target_lsn:
            return True
        if options.until_lsn is not None and reached >= options.until_lsn:
            return True
        now = dt.datetime.now(dt.timezone.utc)
        return idle and options.until_time is not None and now >= options.until_time

    def _roll(self, cursor: Any, end_lsn: int) -> None:
        """Land the parts, save the offsets, then confirm the position to the server."""
        landed = self.landing.land(f"{self.offsets.commit_lsn:016X}")
        for table_name, _, events in landed:
            progress = self.offsets.tables[table_name]
            progress.events += events
            progress.files += 1
            progress.last_commit_time = self.offsets.commit_time
        if not landed and end_lsn <= self.offsets.position:
            return
        self.offsets.position = max(self.offsets.position, end_lsn)
        self.offsets.save()
        cursor.send_feedback(flush_lsn=self.offsets.position)
        if landed:
            self.print(
                f"landed {sum(e for _, _, e in landed)} events in {len(landed)} file(s) up to "
                f"{pgoutput.lsn_text(self.offsets.commit_lsn)}"
            )

    def _relation(self, relation: pgoutput.Relation) -> None:
        previous = self.relations.get(relation.relation_id)
        self.relations[relation.relation_id] = relation
        table = self.group.table_for(relation.qualified_name)
        if table is None or previous is None:
            return
        before = [c.name for c in previous.columns]
        after = [c.name for c in relation.columns]
        if before != after:
            change = f"columns {', '.join(before)} -> {', '.join(after)}"
            self.offsets.progress(table, relation.qualified_name).schema_changes.append(change)
            self.print(f"table '{table.name}': {relation.qualified_name} changed shape: {change}")

    def _change(self, change: Any, transaction: pgoutput.Begin, lsn: int) -> None:
        day = self.options.business_date or transaction.commit_time.date().isoformat()
        source = {
            "ts_ms": epoch_ms(transaction.commit_time),
            "snapshot": "false",
            "txId": transaction.xid,
            "lsn": lsn,
            "commit_lsn": transaction.final_lsn,
        }
        if isinstance(change, pgoutput.Truncate):
            for relation_id in change.relation_ids:
                relation = self.relations[relation_id]
                table = self.group.table_for(relation.qualified_name)
                if table is not None:
                    line = envelope(self.group, relation, "t", None, None, source)
                    self.landing.append(table, day, line)
            return
        if not isinstance(change, pgoutput.RowChange):
            return
        relation = self.relations[change.relation_id]
        table = self.group.table_for(relation.qualified_name)
        if table is None:
            return
        identity_only = relation.replica_identity != "f"
        before = row_image(relation, change.old, identity_only)
        after = row_image(relation, change.new)
        self.landing.append(
            table, day, envelope(self.group, relation, change.op, before, after, source)
        )
