"""``hashcdc capture`` for MariaDB (and MySQL): a consistent snapshot, then the binary log.

The snapshot is one ``START TRANSACTION WITH CONSISTENT SNAPSHOT``; MariaDB gives the
binary log position that transaction sees (``binlog_snapshot_file`` and ``_position``)
without a lock, MySQL under a short ``FLUSH TABLES WITH READ LOCK``. Streaming starts at
that position as a replica would (``python-mysql-replication``; row events carry column
names with ``binlog_row_metadata = FULL``). Each transaction's events land when its XID
(commit) is read; its position is the end of its GTID event, each change's ``lsn`` its
ordinal in the transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from typing import Any, ClassVar

from hashcdc.capture.base import ConnectionLostError, LogCapture, first_line
from hashcdc.capture.envelope import envelope, epoch_ms
from hashcdc.capture.group import qualified_name
from hashcdc.capture.mariadb_source import (
    connect,
    connection_settings,
    log_end,
    position_number,
    position_parts,
    prerequisite_problems,
    query,
    replica_connection,
    row_image,
    server_id,
    typed_columns,
)
from hashcdc.config import TableConfig
from hashcdc.pipeline.evolution.schema_changes import TABLE_CREATED, TABLE_DROPPED, TABLE_RENAMED

# Statements in the log that change a table's shape or empty it.
_DDL = re.compile(
    r"^\s*(alter|create|drop|rename|truncate)\s+(?:table\s+)?(?:if\s+\w+\s+)?"
    r"(?:`?(\w+)`?\.)?`?(\w+)`?",
    re.IGNORECASE,
)
# A table renamed: ``RENAME TABLE a TO b`` or ``ALTER TABLE a RENAME [TO|AS] b``.
_RENAME_TABLE = re.compile(
    r"^\s*rename\s+table\s+\S+\s+to\s+(?:`?(\w+)`?\.)?`?(\w+)`?", re.IGNORECASE
)
_ALTER_RENAME = re.compile(
    r"\brename\s+(?:to\s+|as\s+)?(?!(?:column|index|key)\b)(?:`?(\w+)`?\.)?`?(\w+)`?",
    re.IGNORECASE,
)
# Seconds between the server's heartbeats when the log is quiet (the loop's wake-up).
_HEARTBEAT_SECONDS = 1.0


class MariaDBCapture(LogCapture):
    """MariaDB/MySQL: a consistent snapshot, then the row-format binary log."""

    connector: ClassVar[str] = "mysql"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.any_log_file = "binlog.000001"
        # Set when a captured table is renamed: the capture stops after landing the rename.
        self.stop_message: str | None = None
        # A table's name before a rename the log has not reached yet (the config has the
        # new one): its earlier rows carry the old name.
        self.earlier_names: dict[str, TableConfig] = {}
        # Each source table's column types (schema.table, lower case -> name -> type).
        self.column_types: dict[str, dict[str, str]] = {}

    def position_text(self, position: int) -> str:
        """``binlog.000003:1234``."""
        log_file, offset = position_parts(position, self.any_log_file)
        return f"{log_file}:{offset}"

    def session(self) -> None:
        """Check, snapshot if needed (or check the log is still there), stream."""
        import pymysql

        try:
            with connect(self.group) as connection:
                streaming = self.offsets.snapshot == "done"
                self.require(prerequisite_problems(connection, self.group, streaming))
                end = log_end(connection)
                self.any_log_file = end[0]
                if self.options.once:
                    self.target_position = position_number(*end)
                if self.offsets.snapshot != "done":
                    self.forget_unfinished_snapshot()
                    self._snapshot(connection)
                else:
                    self._check_log_kept(connection)
            self.remove_uncommitted()
            self._stream()
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as exc:
            raise ConnectionLostError(f"lost the server: {first_line(exc)}") from None

    def _check_log_kept(self, connection: Any) -> None:
        kept = {str(row[0]) for row in query(connection, "show binary logs")}
        log_file, _ = position_parts(self.offsets.position, self.any_log_file)
        if log_file not in kept:
            self.fail(
                f"the binary log {log_file} holding the capture's position is purged "
                "(expire_logs_days / binlog_expire_logs_seconds): changes after "
                f"{self.position_text(self.offsets.position)} are lost. Re-snapshot: delete "
                f"{self.offsets.path} and run `hashcdc capture` again, then check the tables "
                "against the source (docs/capture.md)"
            )

    # The snapshot -------------------------------------------------------------------

    def _snapshot(self, connection: Any) -> None:
        started = time.monotonic()
        query(connection, "set session transaction isolation level repeatable read")
        status = dict(query(connection, "show status like 'binlog_snapshot_%'"))
        if status:  # MariaDB: the snapshot's own log position, no lock
            query(connection, "start transaction with consistent snapshot")
            status = dict(query(connection, "show status like 'binlog_snapshot_%'"))
            log_file, offset = (
                status["Binlog_snapshot_file"],
                int(status["Binlog_snapshot_position"]),
            )
        else:  # MySQL: the position under a read lock held while the snapshot starts
            query(connection, "flush tables with read lock")
            query(connection, "start transaction with consistent snapshot")
            log_file, offset = log_end(connection)
            query(connection, "unlock tables")
        position = position_number(log_file, offset)
        day = self.begin_snapshot(position)
        for table in self.group.tables:
            rows = self._snapshot_table(connection, table, position, day)
            columns, _ = typed_columns(connection, *qualified_name(table).split(".", 1))
            self.land_snapshot_table(table, rows, columns)
        query(connection, "commit")
        self.end_snapshot(started)

    def _snapshot_table(self, connection: Any, table: TableConfig, position: int, day: str) -> int:
        import pymysql.cursors

        schema, name = qualified_name(table).split(".", 1)
        source = self._source(schema, name) | {
            "ts_ms": int(time.time() * 1000),
            "snapshot": "true",
            "commit_lsn": position,
            "lsn": 0,
        }
        rows = 0
        column_types = dict(typed_columns(connection, schema, name)[0])
        with connection.cursor(pymysql.cursors.SSCursor) as cursor:
            cursor.execute(f"select * from `{schema}`.`{name}`")
            names = [description[0] for description in cursor.description]
            for values in cursor:
                after = row_image(dict(zip(names, values, strict=True)), column_types)
                self.landing.append(table, day, envelope(source, "r", None, after))
                rows += 1
        return rows

    # Streaming ----------------------------------------------------------------------

    def _stream(self) -> None:
        from pymysqlreplication import BinLogStreamReader

        # Its warnings are about what the capture handles and says itself.
        logging.getLogger("pymysqlreplication").setLevel(logging.ERROR)
        from pymysqlreplication.event import (
            HeartbeatLogEvent,
            MariadbGtidEvent,
            QueryEvent,
            XidEvent,
        )
        from pymysqlreplication.row_event import (
            DeleteRowsEvent,
            UpdateRowsEvent,
            WriteRowsEvent,
        )

        log_file, offset = position_parts(self.offsets.position, self.any_log_file)
        self.earlier_names = {
            progress.source.lower(): table
            for table in self.group.tables
            if (progress := self.offsets.tables.get(table.name))
            and progress.source.lower() != qualified_name(table).lower()
        }
        names = [qualified_name(table).split(".", 1) for table in self.group.tables]
        names += [name.split(".", 1) for name in self.earlier_names]
        stream = BinLogStreamReader(
            connection_settings=connection_settings(self.group),
            pymysql_wrapper=replica_connection,
            server_id=server_id(self.group.slot),
            blocking=True,
            resume_stream=True,
            log_file=log_file,
            log_pos=offset,
            only_events=[
                MariadbGtidEvent,
                XidEvent,
                QueryEvent,
                HeartbeatLogEvent,
                WriteRowsEvent,
                UpdateRowsEvent,
                DeleteRowsEvent,
            ],  # fmt: skip
            only_schemas=sorted({schema for schema, _ in names}),
            only_tables=sorted({name for _, name in names}),
            is_mariadb=True,
            slave_heartbeat=_HEARTBEAT_SECONDS,
        )
        self.streaming = True
        self.print(f"streaming from {self.position_text(self.offsets.position)}")
        transaction: tuple[int, dt.datetime] | None = None
        skipping, ordinal = False, 0
        last_roll, last_seen_end = time.monotonic(), self.offsets.position
        try:
            for event in stream:
                reached = position_number(stream.log_file, stream.log_pos)
                if isinstance(event, MariadbGtidEvent):
                    when = dt.datetime.fromtimestamp(event.timestamp, tz=dt.UTC)
                    if self.past_until(reached, when):
                        break
                    transaction, ordinal = (reached, when), 0
                    skipping = reached <= self.offsets.commit_lsn
                elif isinstance(event, (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)):
                    if transaction is not None and not skipping:
                        ordinal = self._rows(event, transaction, ordinal)
                elif isinstance(event, QueryEvent) and event.query.strip().upper() == "BEGIN":
                    continue
                elif isinstance(event, (XidEvent, QueryEvent)):
                    if isinstance(event, QueryEvent) and transaction is not None and not skipping:
                        self._statement(event, transaction)
                    if transaction is not None and not skipping:
                        self.committed(*transaction)
                    transaction, last_seen_end = None, max(last_seen_end, reached)
                    if self.stop_message:
                        self.roll(last_seen_end)
                        self.fail(self.stop_message)
                    if self.roll_due(last_roll):
                        self.roll(last_seen_end)
                        last_roll = time.monotonic()
                    if self.signalled:
                        break
                elif transaction is None:  # a heartbeat: the log is quiet
                    if self.should_stop_idle(max(reached, self.offsets.position)):
                        break
                    if self.roll_due(last_roll):
                        self.roll(last_seen_end)
                        last_roll = time.monotonic()
            self.roll(last_seen_end)
        finally:
            stream.close()
        self.print(f"stopped at {self.position_text(self.offsets.position)}")

    def _table_for(self, source_table: str) -> TableConfig | None:
        """The config of a source table as the log names it (an earlier name too)."""
        return self.earlier_names.get(source_table.lower()) or self.group.table_for(source_table)

    def _source(self, schema: str, name: str) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "name": self.group.slot,
            "server_id": server_id(self.group.slot),
            "db": schema,
            "table": name,
        }

    def _column_types(self, schema: str, name: str) -> dict[str, str]:
        """A source table's column types (read once a session, again after its DDL)."""
        key = f"{schema}.{name}".lower()
        if key not in self.column_types:
            with connect(self.group) as connection:
                self.column_types[key] = dict(typed_columns(connection, schema, name)[0])
        return self.column_types[key]

    def _rows(self, event: Any, transaction: tuple[int, dt.datetime], ordinal: int) -> int:
        from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent

        table = self._table_for(f"{event.schema}.{event.table}")
        if table is None:
            return ordinal
        position, when = transaction
        for row in event.rows:
            ordinal += 1
            if isinstance(event, UpdateRowsEvent):
                op, before, after = "u", row["before_values"], row["after_values"]
            elif isinstance(event, DeleteRowsEvent):
                op, before, after = "d", row["values"], None
            else:
                op, before, after = "c", None, row["values"]
            source = self._source(event.schema, event.table) | {
                "ts_ms": epoch_ms(when),
                "snapshot": "false",
                "commit_lsn": position,
                "lsn": ordinal,
            }
            types = self._column_types(event.schema, event.table)
            line = envelope(source, op, row_image(before, types), row_image(after, types))
            self.landing.append(table, self.day(when), line)
        return ordinal

    def _statement(self, event: Any, transaction: tuple[int, dt.datetime]) -> None:
        """A statement on a captured table: a truncate lands as ``t``, DDL as a schema change.

        The row events name their columns, so reading on needs nothing else; the table's
        columns after an ``ALTER`` or ``CREATE`` are the server's when the statement is read
        (a later change already made shows with the first). A rename stops the capture.
        """
        found = _DDL.match(event.query)
        if found is None:
            return
        verb, schema, name = found.group(1).lower(), found.group(2), found.group(3)
        schema = schema or (
            event.schema.decode() if isinstance(event.schema, bytes) else event.schema
        )
        table = self._table_for(f"{schema}.{name}")
        if table is None:
            return
        self.column_types.pop(f"{schema}.{name}".lower(), None)
        position, when = transaction
        source = self._source(schema, name) | {
            "ts_ms": epoch_ms(when),
            "snapshot": "false",
            "commit_lsn": position,
            # A truncate is the statement's one change; a schema change comes before any.
            "lsn": 1 if verb == "truncate" else 0,
        }
        if verb == "truncate":
            self.landing.append(table, self.day(when), envelope(source, "t", None, None))
            return
        statement = " ".join(event.query.split())
        renamed = _RENAME_TABLE.match(statement) if verb == "rename" else None
        if verb == "alter":
            renamed = _ALTER_RENAME.search(statement)
        changes: tuple[dict[str, Any], ...] = ()
        if renamed:
            new_name = f"{renamed.group(1) or schema}.{renamed.group(2)}"
            changes = ({"change": TABLE_RENAMED, "from": f"{schema}.{name}", "to": new_name},)
            self.earlier_names.pop(f"{schema}.{name}".lower(), None)
        if renamed and new_name.lower() != qualified_name(table).lower():
            # The log names the table's rows by its new name from here: capture stops, to go
            # on (from right after the rename) once the config names it.
            self.stop_message = (
                f"table '{table.name}': {schema}.{name} was renamed to {new_name} at "
                f"{self.position_text(position)}; its events are landed up to the rename. Set "
                f"source.database.table: {renamed.group(2)} in {table.config_file} and start "
                "the capture again: it goes on from the rename, nothing is lost"
            )
        elif verb == "drop":
            changes = ({"change": TABLE_DROPPED},)
        elif verb == "create":
            changes = ({"change": TABLE_CREATED},)
        columns: list[tuple[str, str]] = []
        keys: list[str] = []
        if verb in ("alter", "create") and not renamed:
            with connect(self.group) as connection:
                columns, keys = typed_columns(connection, schema, name)
        self.shape_seen(table, source, columns, keys, self.day(when), changes, statement)
