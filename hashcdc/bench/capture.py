"""``hashcdc bench --capture TABLE``: how fast capture lands a database's changes.

The database is the one a captured table's config names (its ``source.database``, with
its credentials); the bench makes a table of its own there (``hashcdc_bench_events``, a
slot and publication of its own), in a scratch project, and drops them at the end:

* **snapshot**: ``--rows`` rows read by capture's initial snapshot, against the floor of
  reading them out (``COPY … TO STDOUT`` to a file for PostgreSQL, an unbuffered
  ``SELECT`` for MariaDB);
* **streaming**: the same number of row changes committed as fast as one client can
  (transactions of 1,000 rows) while ``hashcdc capture`` runs as its own process: events
  per second from the first commit to the last event landed, and the lag of the last
  commit (its commit to its file landed); for PostgreSQL, beside it, ``pg_recvlogical``
  decoding the same changes from a slot of its own (the server's own floor);
* **sustained**: then updates at a steady :data:`SUSTAINED_RATE` a second (a 1,000-row
  transaction every 0.1 s) for :data:`SUSTAINED_SECONDS`: each transaction's lag, from its
  commit to the offsets that count its events landed (median and worst);
* **commit to current** (up to :data:`END_TO_END_MAX_ROWS` rows): the day's events are run
  (``hashcdc run``, untimed but reported), then one row is updated while ``hashcdc capture
  --date <next day>`` runs, and that date is run as the daily job runs it (a process of
  its own): seconds from the commit to the run's end, when ``current`` shows the new
  value (checked), split into landing and the date's run.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from hashcdc.capture import mariadb_source, postgresql_source
from hashcdc.capture.group import CaptureGroup, capture_group
from hashcdc.capture.pgoutput import lsn_text
from hashcdc.capture.sources import SourceDatabase, source_for
from hashcdc.codegen import generate
from hashcdc.config import TableConfig, load_table_configs
from hashcdc.runtime.scaffold import scratch_project

BENCH_TABLE = "hashcdc_bench_events"
BATCH_ROWS = 1_000
SUSTAINED_RATE = 10_000  # row events a second: the streaming target
SUSTAINED_SECONDS = 30.0
# Past this size the day's first run (every snapshot and streamed event) takes too long
# for a bench; the commit-to-current phase is left out.
END_TO_END_MAX_ROWS = 2_000_000
MARKER = "hashcdc bench marker"


def _config(table: TableConfig, slot: str) -> dict[str, Any]:
    database = dataclasses.asdict(table.source.database)  # type: ignore[arg-type]
    database.update(table=BENCH_TABLE, slot=slot, publication=slot, query=None)
    database = {key: value for key, value in database.items() if value is not None}
    return {
        "name": BENCH_TABLE,
        "extract_type": "changes",
        "source": {
            "path": f"landing/{BENCH_TABLE}/{{business_date}}",
            "format": "debezium",
            "database": database,
        },
        "changes": {"sequence_by": ["source.commit_lsn", "source.lsn"]},
        "columns": [
            {"name": "id", "type": "bigint", "key": True},
            {"name": "item", "type": "string"},
            {"name": "amount", "type": "decimal(12,2)"},
        ],
    }


def _hashcdc(work: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "hashcdc.cli", "--project-dir", str(work), *args]


def _capture(work: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        _hashcdc(work, "capture", *args),
        stdout=(work / "capture.log").open("a"),
        stderr=subprocess.STDOUT,
    )


def _run_date(work: Path, environment: dict[str, str], business_date: str) -> float:
    """``hashcdc run --date`` as the daily job runs it; its seconds."""
    started = time.monotonic()
    done = subprocess.run(
        _hashcdc(work, "run", "--date", business_date),
        cwd=work,
        env=os.environ | environment,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"hashcdc run --date {business_date}:\n{done.stdout[-3000:]}")
    return time.monotonic() - started


def _commit_to_current(
    database: SourceDatabase, group: Any, work: Path, environment: dict[str, str]
) -> dict[str, Any]:
    """Seconds from a commit on the source to ``current`` showing it (see the module doc)."""
    today = dt.datetime.now(dt.UTC).date()
    figures = {"first_run_s": round(_run_date(work, environment, today.isoformat()), 1)}
    next_day = (today + dt.timedelta(days=1)).isoformat()
    log = work / "capture.log"
    started = log.read_text().count("streaming from")
    capture = _capture(work, "--roll-seconds", "1", "--date", next_day)
    try:
        while log.read_text().count("streaming from") <= started:
            time.sleep(0.05)
        before = _landed_events(work)
        committed = time.monotonic()
        with database.connect(group) as connection:
            database.query(connection, f"update {BENCH_TABLE} set item = %s where id = 1", MARKER)
        while _landed_events(work) <= before:
            time.sleep(0.05)
        landed = time.monotonic()
    finally:
        capture.terminate()
        capture.wait(timeout=60)
    run_s = _run_date(work, environment, next_day)
    shown = subprocess.run(
        _hashcdc(work, "query", f"select item from {BENCH_TABLE}_current where id = 1"),
        cwd=work, env=os.environ | environment, capture_output=True, text=True,
    ).stdout  # fmt: skip
    if MARKER not in shown:
        raise SystemExit(f"the committed change is not in current after its run: {shown}")
    return figures | {
        "commit_to_landed_s": round(landed - committed, 2),
        "date_run_s": round(run_s, 1),
        "commit_to_current_s": round(landed - committed + run_s, 1),
    }


def _landed_events(work: Path) -> int:
    offsets = next((work / ".hashcdc" / "capture").glob("*.json"), None)
    if offsets is None:
        return 0
    tables = json.loads(offsets.read_text()).get("tables", {})
    return int(tables.get(BENCH_TABLE, {}).get("events", 0))


def _update_range(database: SourceDatabase, connection: Any, first: int, last: int) -> None:
    """Update the rows of ids ``first``..``last`` in one transaction."""
    database.query(
        connection,
        f"update {BENCH_TABLE} set amount = amount + 1 where id between %s and %s",
        first,
        last,
    )


def _update_every_row(database: SourceDatabase, connection: Any, rows: int) -> int:
    """Update every row once, BATCH_ROWS rows per transaction; the log's end after."""
    for first in range(1, rows + 1, BATCH_ROWS):
        _update_range(database, connection, first, first + BATCH_ROWS - 1)
    return int(database.log_position(connection))


def _sustained(database: SourceDatabase, group: Any, work: Path, rows: int) -> dict[str, Any]:
    """Commit SUSTAINED_RATE row updates a second while capture runs; each one's lag."""
    landed: list[tuple[float, int]] = []
    watching = threading.Event()

    def watch() -> None:
        while not watching.is_set():
            landed.append((time.monotonic(), _landed_events(work)))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    commits: list[tuple[float, int]] = []
    total = _landed_events(work)
    interval = BATCH_ROWS / SUSTAINED_RATE
    with database.connect(group) as connection:
        started = time.monotonic()
        for index in range(int(SUSTAINED_SECONDS / interval)):
            time.sleep(max(0.0, started + index * interval - time.monotonic()))
            first = (index * BATCH_ROWS) % rows + 1
            last = min(first + BATCH_ROWS - 1, rows)
            _update_range(database, connection, first, last)
            total += last - first + 1
            commits.append((time.monotonic(), total))
    while _landed_events(work) < total:
        time.sleep(0.05)
    watching.set()
    watcher.join()
    landed.append((time.monotonic(), _landed_events(work)))
    lags = sorted(
        next(moment for moment, count in landed if moment >= at and count >= target) - at
        for at, target in commits
    )
    committed = commits[-1][1] - commits[0][1] + BATCH_ROWS
    return {
        "sustained_rate": round(committed / (commits[-1][0] - started)),
        "sustained_lag_p50_s": round(lags[len(lags) // 2], 2),
        "sustained_lag_max_s": round(lags[-1], 2),
    }


# A slot of the bench's own for `pg_recvlogical`, the floor of PostgreSQL's streaming.
FLOOR_SLOT = "hashcdc_bench_floor"


class _PostgresBench:
    """The bench's table, its read floor and its clean-up on PostgreSQL."""

    @staticmethod
    def prepare(connection: Any, table: str, rows: int) -> None:
        """A fresh bench table of ``rows`` rows."""
        postgresql_source.query(connection, f"drop table if exists {table}")
        postgresql_source.query(
            connection,
            f"create table {table} (id bigint primary key, item text, amount numeric(12,2))",
        )
        postgresql_source.query(
            connection,
            f"insert into {table} select n, 'item ' || n, n * 1.25 from generate_series(1, %s) n",
            rows,
        )

    @staticmethod
    def read_floor(connection: Any, table: str) -> float:
        """Seconds to read the table out: ``COPY … TO STDOUT`` into a file."""
        started = time.monotonic()
        with tempfile.TemporaryFile() as sink, connection.cursor() as cursor:
            cursor.copy_expert(f"copy (select * from {table}) to stdout", sink)
        return time.monotonic() - started

    @staticmethod
    def floor_start(group: CaptureGroup) -> CaptureGroup:
        """A slot of its own for ``pg_recvlogical``, made before the changes."""
        with postgresql_source.connect(group) as connection:
            postgresql_source.query(
                connection, "select pg_create_logical_replication_slot(%s, 'pgoutput')", FLOOR_SLOT
            )
        return group

    @staticmethod
    def floor_wait(group: CaptureGroup, end: int) -> float:
        """Seconds ``pg_recvlogical`` takes to decode its slot up to ``end`` (to a file)."""
        found = shutil.which("pg_recvlogical") or next(
            iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_recvlogical"))), None
        )
        settings = postgresql_source.dsn(group)
        started = time.monotonic()
        subprocess.run(
            [str(found), "-h", settings["host"], "-p", str(settings["port"]), "-U",
             settings["user"], "-d", settings["dbname"], "--slot", FLOOR_SLOT, "--start",
             "--no-loop", "--endpos", lsn_text(end), "-f", os.devnull,
             "-o", "proto_version=1", "-o", f"publication_names={group.publication}"],
            check=True, env=os.environ | {"PGPASSWORD": settings.get("password") or ""},
        )  # fmt: skip
        return time.monotonic() - started

    @staticmethod
    def clean(connection: Any, table: str, slot: str) -> None:
        """Drop the bench's slots, publication and table."""
        for name in (slot, FLOOR_SLOT):
            postgresql_source.query(
                connection,
                "select pg_drop_replication_slot(slot_name) from pg_replication_slots "
                "where slot_name = %s",
                name,
            )
        postgresql_source.query(connection, f"drop publication if exists {slot}")
        postgresql_source.query(connection, f"drop table if exists {table}")


class _MariaDBBench:
    """The bench's table, its read floor and its clean-up on MariaDB."""

    @staticmethod
    def prepare(connection: Any, table: str, rows: int) -> None:
        """A fresh bench table of ``rows`` rows."""
        mariadb_source.query(connection, f"drop table if exists {table}")
        mariadb_source.query(
            connection,
            f"create table {table} (id bigint primary key, item text, amount decimal(12,2))",
        )
        mariadb_source.query(
            connection,
            f"insert into {table} select seq, concat('item ', seq), seq * 1.25 "
            f"from seq_1_to_{rows}",
        )

    @staticmethod
    def read_floor(connection: Any, table: str) -> float:
        """Seconds to read the table out: an unbuffered select, each row written to a file."""
        import pymysql.cursors

        started = time.monotonic()
        with (
            tempfile.TemporaryFile("w") as sink,
            connection.cursor(pymysql.cursors.SSCursor) as cursor,
        ):
            cursor.execute(f"select * from {table}")
            for row in cursor:
                sink.write("\t".join(map(str, row)) + "\n")
        return time.monotonic() - started

    @staticmethod
    def clean(connection: Any, table: str, slot: str) -> None:
        """Drop the bench's table."""
        mariadb_source.query(connection, f"drop table if exists {table}")


BENCHES: dict[str, Any] = {"postgresql": _PostgresBench, "mariadb": _MariaDBBench}


def run(project_dir: Path, table_name: str, rows: int) -> dict[str, Any]:
    """Measure snapshot and streaming rates for the database of ``table_name``."""
    tables = {t.name: t for t in load_table_configs(project_dir / "tables")}
    if table_name not in tables or tables[table_name].source.database is None:
        raise SystemExit(f"hashcdc bench --capture: no table '{table_name}' with source.database")
    source_table = tables[table_name]
    kind = source_table.source.database.kind  # type: ignore[union-attr]
    work = Path(tempfile.mkdtemp(prefix="hashcdc_capture_bench_"))
    environment = scratch_project(project_dir, work)
    slot = "hashcdc_bench"
    (work / "tables" / f"{BENCH_TABLE}.yml").write_text(
        yaml.safe_dump(_config(source_table, slot), sort_keys=False)
    )
    generate.write(work, load_table_configs(work / "tables"))
    group = capture_group(load_table_configs(work / "tables"))
    database, bench = source_for(kind), BENCHES[kind]
    figures: dict[str, Any] = {"kind": kind, "rows": rows}
    try:
        with database.connect(group) as connection:
            bench.prepare(connection, BENCH_TABLE, rows)
            figures["floor_read_s"] = round(bench.read_floor(connection, BENCH_TABLE), 2)
        started = time.monotonic()
        snapshot = _capture(work, "--once", "--roll-seconds", "1")
        if snapshot.wait() != 0:
            raise SystemExit((work / "capture.log").read_text()[-3000:])
        figures["snapshot_s"] = round(time.monotonic() - started, 2)
        streaming = _capture(work, "--roll-seconds", "1")
        try:
            while _landed_events(work) < rows:  # the snapshot's events are counted first
                time.sleep(0.2)
            floor = bench.floor_start(group) if kind == "postgresql" else None
            first_commit = time.monotonic()
            with database.connect(group) as connection:
                end = _update_every_row(database, connection, rows)
            last_commit = time.monotonic()
            while _landed_events(work) < 2 * rows:
                time.sleep(0.05)
            landed = time.monotonic()
            if floor is not None:
                figures["pg_recvlogical_s"] = round(bench.floor_wait(floor, end), 2)
            figures |= _sustained(database, group, work, rows)
        finally:
            streaming.terminate()
            streaming.wait(timeout=60)
        if rows <= END_TO_END_MAX_ROWS:
            figures |= _commit_to_current(database, group, work, environment)
        figures["commit_s"] = round(last_commit - first_commit, 2)
        figures["stream_s"] = round(landed - first_commit, 2)
        figures["events_per_s"] = round(rows / (landed - first_commit))
        figures["lag_last_commit_s"] = round(landed - last_commit, 2)
    finally:
        # The runs went through the scratch project's engine: it goes with the project.
        subprocess.run(_hashcdc(work, "engine", "stop"), env=os.environ | environment, check=False)
        with database.connect(group) as connection:
            bench.clean(connection, BENCH_TABLE, slot)
        if not os.environ.get("HASHCDC_BENCH_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    return figures
