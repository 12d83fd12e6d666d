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

import json
import select
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from hashcdc.capture import pgoutput
from hashcdc.capture.base import ConnectionLostError, LogCapture, first_line
from hashcdc.capture.envelope import envelope, epoch_ms
from hashcdc.capture.group import qualified_name
from hashcdc.capture.postgresql_source import (
    connect,
    log_position,
    page_ranges,
    position_text,
    prerequisite_problems,
    query,
    relation_id,
    row_image,
    snapshot_copy,
    table_relation,
    typed_columns,
)
from hashcdc.config import TableConfig
from hashcdc.pipeline.evolution.schema_changes import TABLE_RENAMED

# How long to wait for the server between checks of the stop conditions.
_POLL_SECONDS = 0.5


class PostgresCapture(LogCapture):
    """PostgreSQL: a slot with an exported snapshot, then ``pgoutput`` from the slot."""

    connector: ClassVar[str] = "postgresql"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.relations: dict[int, pgoutput.Relation] = {}
        # A captured table by its relation id (its OID), whatever its name: the stream names
        # a table as it was named when each change was made, before or after a rename.
        self.captured: dict[int, TableConfig] = {}
        self.cursor: Any = None

    def session(self) -> None:
        """Check, drop an unfinished snapshot's slot, snapshot if needed, stream."""
        import psycopg2

        try:
            with connect(self.group) as connection:
                streaming = self.offsets.snapshot == "done"
                self.require(prerequisite_problems(connection, self.group, streaming))
                self.captured = {
                    relation_id(connection, qualified_name(table)) or 0: table
                    for table in self.group.tables
                }
                self._ensure_publication(connection)
                if self.options.once:
                    self.target_position = log_position(connection)
                slot = query(
                    connection,
                    "select active_pid from pg_replication_slots where slot_name = %s",
                    self.group.slot,
                )
                if slot and slot[0][0] is not None:
                    self.fail(
                        f"the replication slot {self.group.slot} is in use by the server's "
                        f"process {slot[0][0]} (another `hashcdc capture` of these tables?): "
                        "stop that one first; one capture per slot"
                    )
                if self.offsets.snapshot != "done":
                    if slot:
                        self.print(f"dropping slot {self.group.slot}: its snapshot never finished")
                        query(connection, "select pg_drop_replication_slot(%s)", self.group.slot)
                    self.forget_unfinished_snapshot()
                elif not slot:
                    self.fail(
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
                self.remove_uncommitted()
                self.cursor = cursor
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
            self.fail(
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
        day = self.begin_snapshot(lsn)
        started = time.monotonic()
        for table in self.group.tables:
            rows, columns = self._snapshot_table(table, snapshot_name, lsn, day)
            self.land_snapshot_table(table, rows, columns)
        self.end_snapshot(started)

    def _snapshot_table(
        self, table: TableConfig, snapshot_name: str, lsn: int, day: str
    ) -> tuple[int, list[tuple[str, str]]]:
        """Read a table in the slot's snapshot, its page ranges on connections side by side.

        Its rows, and its columns with their types.
        """
        with connect(self.group) as connection:
            relation = table_relation(connection, *qualified_name(table).split(".", 1))
            columns = typed_columns(connection, relation)
            ranges = table.source.database.partitions if table.source.database else 1
            pages = page_ranges(connection, relation, ranges)
            source = self._source(relation) | {
                "ts_ms": int(time.time() * 1000),
                "snapshot": "true",
                "lsn": lsn,
                "commit_lsn": lsn,
            }
            tail = f',"source":{json.dumps(source)},"op":"r","ts_ms":{source["ts_ms"]}}}'
            with connection.cursor() as cursor:
                literal = cursor.mogrify("%s", (tail,)).decode()
        parts = [self.landing.bulk_part(table, day, f"{i:03d}") for i in range(len(pages))]
        copies = [snapshot_copy(relation, literal, range_) for range_ in pages]
        with ThreadPoolExecutor(len(pages)) as pool:
            counts = list(
                pool.map(self._copy_in_snapshot, [snapshot_name] * len(pages), copies, parts)
            )
        for index, count in enumerate(counts):
            self.landing.count(table, day, f"{index:03d}", count)
        return sum(counts), columns

    def _copy_in_snapshot(self, snapshot_name: str, copy: str, part: Any) -> int:
        """Run one range's ``COPY`` in the exported snapshot, into its part; its rows."""
        with connect(self.group) as connection:
            connection.autocommit = False
            with connection.cursor() as cursor:
                cursor.execute("set transaction isolation level repeatable read")
                cursor.execute("set transaction snapshot %s", (snapshot_name,))
                cursor.copy_expert(copy, part)
                rows = cursor.rowcount
            connection.rollback()
        return rows

    # Streaming ----------------------------------------------------------------------

    def _stream(self, cursor: Any) -> None:
        cursor.start_replication(
            slot_name=self.group.slot,
            decode=False,
            start_lsn=self.offsets.position,
            options={"proto_version": "1", "publication_names": self.group.publication},
            status_interval=10,
        )
        # The server sends each relation again in a new session, and a shape seen in a
        # session whose roll was lost must be compared again.
        self.relations = {}
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
                    if self.should_stop_idle(max(cursor.wal_end, self.offsets.position)):
                        break
                    if self.roll_due(last_roll):
                        self.roll(last_seen_end)
                        last_roll = time.monotonic()
                    elif not self.landing.pending and cursor.wal_end > self.offsets.position:
                        # Nothing of ours is pending: let the server recycle what it skipped.
                        self.confirm()
                ready = select.select([cursor], [], [], _POLL_SECONDS)[0]
                if not ready and transaction is None:
                    cursor.send_feedback(reply=True)
                continue
            decoded = pgoutput.decode(message.payload)
            if isinstance(decoded, pgoutput.Begin):
                if self.past_until(decoded.final_lsn, decoded.commit_time):
                    break
                transaction, skipping = decoded, decoded.final_lsn <= self.offsets.commit_lsn
            elif isinstance(decoded, pgoutput.Relation):
                self._relation(decoded, None if skipping else transaction)
            elif isinstance(decoded, pgoutput.Commit):
                transaction = None
                if not skipping:
                    self.committed(decoded.commit_lsn, decoded.commit_time)
                last_seen_end = max(last_seen_end, decoded.end_lsn)
                if self.roll_due(last_roll):
                    self.roll(last_seen_end)
                    last_roll = time.monotonic()
                if self.signalled:
                    break
            elif transaction is not None and not skipping:
                self._change(decoded, transaction, message.data_start)
        self.roll(last_seen_end)
        self.print(f"stopped at {pgoutput.lsn_text(self.offsets.position)}")

    @staticmethod
    def _read(cursor: Any) -> Any:
        """The next message; any error of the stream itself is a lost server (retried)."""
        import psycopg2

        try:
            return cursor.read_message()
        except psycopg2.DatabaseError as exc:
            raise ConnectionLostError(f"lost the server: {first_line(exc)}") from None

    def _relation(self, relation: pgoutput.Relation, transaction: pgoutput.Begin | None) -> None:
        """A table's shape, sent before its first change of a session and after a change.

        The shape (its name included) is compared with the one last landed; a change lands
        as a schema-change event. A renamed table stays captured (by its id); the next
        start needs the new name in its config, and the capture says so.
        """
        previous = self.relations.get(relation.relation_id)
        self.relations[relation.relation_id] = relation
        table = self.captured.get(relation.relation_id)
        if table is None or transaction is None:  # not captured, or landed already
            return
        if relation == previous:  # sent again unchanged (a cache invalidation): compared
            return
        renamed: tuple[dict[str, Any], ...] = ()
        known = self.offsets.progress(table, qualified_name(table)).source
        if known.lower() != relation.qualified_name.lower():
            renamed = ({"change": TABLE_RENAMED, "from": known,
                        "to": relation.qualified_name},)  # fmt: skip
            if relation.qualified_name.lower() != qualified_name(table).lower():
                self.print(
                    f"table '{table.name}': {known} was renamed to {relation.qualified_name}; "
                    "still captured. Before the capture next starts, set "
                    f"source.database.table: {relation.qualified_name} in {table.config_file}"
                )
        with connect(self.group) as connection:
            columns = typed_columns(connection, relation)
        source = self._source(relation) | {
            "ts_ms": epoch_ms(transaction.commit_time),
            "snapshot": "false",
            "txId": transaction.xid,
            "commit_lsn": transaction.final_lsn,
            "lsn": 0,
        }
        keys = [c.name for c in relation.columns if c.is_key]
        self.shape_seen(table, source, columns, keys, self.day(transaction.commit_time), renamed)

    def _change(self, change: Any, transaction: pgoutput.Begin, lsn: int) -> None:
        day = self.day(transaction.commit_time)
        position = {
            "ts_ms": epoch_ms(transaction.commit_time),
            "snapshot": "false",
            "txId": transaction.xid,
            "lsn": lsn,
            "commit_lsn": transaction.final_lsn,
        }
        if isinstance(change, pgoutput.Truncate):
            for relation_id in change.relation_ids:
                relation = self.relations[relation_id]
                table = self.captured.get(relation_id)
                if table is not None:
                    source = self._source(relation) | position
                    self.landing.append(table, day, envelope(source, "t", None, None))
            return
        if not isinstance(change, pgoutput.RowChange):
            return
        relation = self.relations[change.relation_id]
        table = self.captured.get(change.relation_id)
        if table is None:
            return
        identity_only = relation.replica_identity != "f"
        before = row_image(relation, change.old, identity_only)
        after = row_image(relation, change.new)
        source = self._source(relation) | position
        self.landing.append(table, day, envelope(source, change.op, before, after))

    def _source(self, relation: pgoutput.Relation) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "name": self.group.slot,
            "db": self.group.database.database,
            "schema": relation.namespace,
            "table": relation.name,
        }

    def position_text(self, position: int) -> str:
        """An LSN as PostgreSQL writes it (``16/B374D848``)."""
        return position_text(position)

    def confirm(self) -> None:
        """Confirm the landed position to the slot (the server may recycle the WAL before)."""
        self.cursor.send_feedback(flush_lsn=self.offsets.position)
