"""``hashcdc capture``: a live PostgreSQL table, snapshotted then streamed, equals the lake.

A real server (the session's, with ``wal_level = logical``) holds the source table; the
capture runs as the user would run it, a process of its own. While it runs, a workload of
inserts, updates (a key change among them), deletes, one large transaction, an update
that leaves a TOASTed value unchanged and a column addition is committed; the capture is
SIGKILLed mid-stream and started again; then, under a sustained load of small
transactions, the capture's connections are cut mid-stream (a loopback proxy) and the
server is killed and started again after a pause. The
landed events then go through the ordinary pipeline (``dbt build``): `current` must equal
``SELECT *`` on the source, and the history (``history: audit``: every applied event) must
hold each committed change exactly once — counted against a trigger on the source that
logs every row change as it commits.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import json
import math
import os
import re
import signal
import struct
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import pymysql
import pytest
from servers import (
    LOOPBACK,
    Lines,
    LoopbackProxy,
    Workload,
    finish,
    hashcdc,
    hashcdc_environment,
    kill_the_engine_when,
    models_begun,
    query_rows,
    wait_until,
)
from source_configs import SOURCE_DATABASE, captured_config

from hashcdc.cli import main
from hashcdc.runtime.local_servers import free_port

TABLE = "captured_orders"
MARIADB_TABLE = "captured_maria_orders"  # its own: both run dates 1 and 2 in one warehouse
FIRST, SECOND, QUIET = "2024-01-01", "2024-01-02", "2024-01-03"
LARGE_TRANSACTION_ROWS = 20_000
LOAD_KEYS = 300_000  # the sustained load's inserted rows: ids from here on


@pytest.fixture
def orders(postgres: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A source table with a trigger that logs every committed row change."""
    monkeypatch.setenv("SHOP_USER", "hashcdc")
    return _orders_table(postgres)


def _orders_table(postgres: Any) -> str:
    """A new source table of 50 orders, its trigger logging every committed row change."""
    if SOURCE_DATABASE not in postgres.psql("select datname from pg_database").split():
        postgres.psql(f"create database {SOURCE_DATABASE}")
    name = f"orders_{uuid.uuid4().hex[:8]}"
    postgres.psql(
        f"create table public.{name} (id int primary key, item text, amount numeric(10,2), "
        f"placed date, paid boolean, notes text); "
        f"create table public.{name}_log (op char(1)); "
        f"create function public.{name}_logged() returns trigger language plpgsql as $$ "
        f"begin insert into public.{name}_log values (left(TG_OP, 1)); return null; end $$; "
        f"create trigger logged after insert or update or delete on public.{name} "
        f"for each row execute function public.{name}_logged(); "
        f"insert into public.{name} select n, 'item ' || n, n * 1.25, date '2023-12-01' + n, "
        "n % 2 = 0, null from generate_series(1, 50) n",
        SOURCE_DATABASE,
    )
    return name


def _capture(project: Any, *options: str) -> subprocess.Popen:
    """``hashcdc capture`` in a process of its own (as a user starts it)."""
    log = (project.root / "capture.log").open("a")
    return subprocess.Popen(
        [sys.executable, "-m", "hashcdc.cli", "--project-dir", str(project.root), "capture",
         "--roll-seconds", "1", "--retry-seconds", "60", *options],
        stdout=log, stderr=subprocess.STDOUT, env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def _landed(project: Any, business_date: str, name: str = TABLE) -> list[Path]:
    """A date's landed event files (not its schema-change files, ``_schema-*``)."""
    folder = project.root / "landing" / name / business_date
    return sorted(path for path in folder.glob("*.json") if not path.name.startswith("_"))


def _wait_for(check: Any, seconds: float, what: str, project: Any) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    log = project.root / "capture.log"
    shown = log.read_text() if log.exists() else "(no capture process)"
    raise AssertionError(f"{what} not within {seconds} s; capture's log:\n{shown}")


# A lake table's values as psql prints them (a null as ''), the key first.
_LAKE_COLUMNS = (
    "order_id, item, cast(amount as string) as amount, "
    "coalesce(cast(placed as string), '') as placed, "
    "case when paid is null then '' when paid then 't' else 'f' end as paid, "
    "coalesce(md5(notes), '') as notes"
)


def _lake_rows(project: Any, name: str = TABLE) -> dict[int, tuple[str, ...]]:
    rows = project.rows(f"select {_LAKE_COLUMNS} from {name}_current")
    return {
        row["order_id"]: (row["item"], row["amount"], row["placed"], row["paid"], row["notes"])
        for row in rows
    }


@pytest.fixture
def maria_orders(mariadb: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A MariaDB source table with triggers that log every committed row change."""
    name = f"orders_{uuid.uuid4().hex[:8]}"
    mariadb.sql(f"create database if not exists {SOURCE_DATABASE}")
    mariadb.sql(
        f"create table {name} (id int primary key, item text, amount decimal(10,2), "
        f"placed date, paid boolean, notes longtext); create table {name}_log (op char(1)); "
        + " ".join(
            f"create trigger {name}_{op} after {verb} on {name} for each row "
            f"insert into {name}_log values ('{op}');"
            for op, verb in (("I", "insert"), ("U", "update"), ("D", "delete"))
        )
        + f" insert into {name} select seq, concat('item ', seq), seq * 1.25, "
        "date '2023-12-01' + interval seq day, seq % 2 = 0, null from seq_1_to_50",
        SOURCE_DATABASE,
    )
    monkeypatch.setenv("SHOP_USER", "hashcdc")
    return name


@dataclass
class Source:
    """A source database as the workload sees it: its SQL and what it differs in."""

    sql: Callable[[str], str]  # run a statement in the source database; its output
    separator: str  # between the client's output columns
    table: str  # the source table, as statements name it
    series: str  # rows numbered `n` from {first} to {last}, as a FROM clause
    crash: Callable[[float], None]  # stop the server abruptly, start it after a pause
    connect: Callable[[], Any]  # a DB-API connection to the source database
    toast: bool  # PostgreSQL: values stored out of line
    widen_amount: str  # the statement that widens `amount` to decimal(12,2)
    lake: str = TABLE  # the table's name in the lake

    def rows(self) -> dict[int, tuple[str, ...]]:
        """Every row, values as the client prints them (a null as '')."""
        lines = self.sql(
            f"select id, item, amount, coalesce(cast(placed as char(10)), ''), case when paid "
            f"is null then '' when paid then 't' else 'f' end, coalesce(md5(notes), '') "
            f"from {self.table}"
        )
        return {
            int(line.split(self.separator)[0]): tuple(line.split(self.separator)[1:])
            for line in lines.splitlines()
        }

    def committed(self) -> dict[str, int]:
        """The row changes the source's triggers logged, by operation (I, U, D)."""
        lines = self.sql(f"select op, count(*) from {self.table}_log group by op")
        return {op: int(n) for op, n in (line.split(self.separator) for line in lines.splitlines())}


def _postgres_source(postgres: Any, table: str) -> Source:
    return Source(
        sql=lambda statement: postgres.psql(statement, SOURCE_DATABASE),
        separator="|",
        table=f"public.{table}",
        series="generate_series({first}, {last}) n",
        crash=postgres.crash,
        connect=lambda: psycopg2.connect(
            host=LOOPBACK,
            port=postgres.port,
            dbname=SOURCE_DATABASE,
            user="hashcdc",
            connect_timeout=5,
        ),
        toast=True,
        widen_amount=f"alter table public.{table} alter column amount type numeric(12,2)",
    )


def _mariadb_source(mariadb: Any, table: str) -> Source:
    return Source(
        sql=lambda statement: mariadb.sql(statement, SOURCE_DATABASE),
        separator="\t",
        table=table,
        series="(select seq as n from seq_{first}_to_{last}) numbers",
        crash=mariadb.crash,
        connect=lambda: pymysql.connect(
            host=LOOPBACK,
            port=mariadb.port,
            user="hashcdc",
            database=SOURCE_DATABASE,
            connect_timeout=5,
        ),
        toast=False,
        widen_amount=f"alter table {table} modify amount decimal(12,2)",
        lake=MARIADB_TABLE,
    )


def _load(source: Source) -> Workload:
    """Sustained load: each transaction updates a row, inserts one, every 4th deletes one."""

    def transaction(n: int) -> list[str]:
        statements = [
            f"update {source.table} set amount = amount + 1 where id = {1 + n % 9}",
            f"insert into {source.table} (id, item, amount, paid) "
            f"values ({LOAD_KEYS + n}, 'load', {n % 1000}, true)",
        ]
        if n % 4 == 3:
            statements.append(f"delete from {source.table} where id = {LOAD_KEYS + n - 2}")
        return statements

    return Workload(source.connect, transaction)


def _under_load_cut_then_crash(project: Any, source: Source, proxy: LoopbackProxy) -> None:
    """Under sustained load: the capture's connections cut mid-stream, then the server killed.

    Each happens while transactions are read but not landed yet (rolls every second):
    what was read and dropped must be streamed again, not skipped.
    """
    load = _load(source)
    load.start()
    try:

        def commits_beyond(floor: int) -> Callable[[], bool]:
            return lambda: load.acknowledged >= floor

        _wait_for(commits_beyond(100), 60, "the load's first commits", project)
        time.sleep(1.5)  # mid-roll
        assert proxy.cut() > 0
        _wait_for(commits_beyond(load.acknowledged + 200), 60, "the load after the cut", project)
        source.crash(2.0)
        _wait_for(commits_beyond(load.acknowledged + 200), 120, "the load after a crash", project)
    finally:
        load.stop()
    assert load.acknowledged > 500 and load.failed >= 1, (load.acknowledged, load.failed)
    print(f"load: {load.acknowledged} transactions acknowledged, {load.failed} failed")


def _stream_through_a_kill_and_a_server_restart(
    project: Any, source: Source, config: dict[str, Any], proxy: LoopbackProxy
) -> None:
    """Day 1 the snapshot, day 2 a workload through kills, a cut and a server crash: checked.

    Current must equal the source, and history hold each committed change once. The
    source's shape changes on day 2 (a column added, `amount` widened): day 2 is refused
    until the config says the widening, then loads the wider values. The capture reaches
    the server through ``proxy``.
    """
    root = ["--project-dir", str(project.root)]
    sql, table, lake = source.sql, source.table, source.lake
    # Day 1: the snapshot alone (--once: up to the log's end at the start).
    assert main([*root, "capture", "--once", "--date", FIRST]) == 0
    assert project.build(FIRST, lake).success
    assert _lake_rows(project, lake) == source.rows()
    sql(f"truncate table {table}_log")

    def landed_text() -> str:
        return "".join(path.read_text() for path in _landed(project, SECOND, lake))

    # Day 2: streaming while the workload runs.
    capture = _capture(project, "--date", SECOND)
    try:
        sql(f"insert into {table} values (51, 'new', 9.99, '2024-01-02', true, null)")
        sql(f"update {table} set amount = amount + 1 where id <= 10")
        sql(f"update {table} set id = 1000 where id = 11")  # the key changes
        sql(f"delete from {table} where id between 20 and 24")
        _wait_for(lambda: _landed(project, SECOND, lake), 60, "a first streamed file", project)
        # A large transaction (its events are written to disk as they come, not held).
        bulk = source.series.format(first=10001, last=10000 + LARGE_TRANSACTION_ROWS)
        sql(f"insert into {table} select n, 'bulk', n, null, false, null from {bulk}")
        if source.toast:
            # A value stored out of line, then an update that leaves it unchanged.
            sql(
                f"update {table} set notes = (select string_agg(md5(random()::text), '') "
                "from generate_series(1, 300)) where id = 30"
            )
            sql(f"update {table} set item = 'renamed' where id = 30")
        capture.send_signal(signal.SIGKILL)
        capture.wait(timeout=30)
        killed = capture.pid
        # Committed while the capture is down: streamed after its restart.
        sql(f"update {table} set paid = not paid where id between 40 and 45")
        sql(f"delete from {table} where id between 10001 and 10100")
        port = free_port()  # as a service: its metrics scraped
        capture = _capture(project, "--date", SECOND, "--metrics-port", str(port))
        sql(f"insert into {table} values (52, 'after restart', 1, null, null, null)")
        _wait_for(lambda: "after restart" in landed_text(), 60, "the change after", project)
        # The killed process's part files are gone (none left for good, none reopened).
        folder = project.root / "landing" / lake / SECOND
        assert not list(folder.glob(f"_capturing-*-{killed}*")), sorted(folder.iterdir())
        _under_load_cut_then_crash(project, source, proxy)
        sql(f"alter table {table} add column channel text")
        sql(f"update {table} set channel = 'web', amount = 0 where id = 51")
        sql(f"insert into {table} values (53, 'with channel', 2, null, true, null, 'app')")
        sql(source.widen_amount)
        sql(f"update {table} set amount = 123456789.5 where id = 53")
        _wait_for(lambda: "with channel" in landed_text(), 120, "the server's restart", project)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as answer:
            metrics = answer.read().decode()
        # The server's cut and crash counted; the table's events landed so far.
        assert re.search(r'hashcdc_capture_failures_total\{slot="[^"]+"\} [1-9]', metrics), metrics
        assert re.search(rf'hashcdc_capture_events_total\{{table="{lake}"\}} [1-9]', metrics)
        capture.send_signal(signal.SIGTERM)
        assert capture.wait(timeout=60) == 0
    finally:
        if capture.poll() is None:
            capture.kill()
    log = (project.root / "capture.log").read_text()
    assert "retrying" in log and "changed shape" in log, log

    # Whatever was committed and not landed yet: --once catches up and stops.
    assert main([*root, "capture", "--once", "--date", SECOND]) == 0
    shapes = sorted((project.root / "landing" / lake / SECOND).glob("_schema-*.json"))
    changes = [c for path in shapes for line in path.read_text().splitlines()
               for c in json.loads(line)["changes"]]  # fmt: skip
    assert {(c["change"], c["column"]) for c in changes} == {
        ("column added", "channel"),
        ("column type changed", "amount"),
    }, changes
    # The widening is a change the config does not say yet: refused, nothing written.
    outcome = project.build(SECOND, lake)
    assert not outcome.success
    assert "widened column 'amount'" in outcome.text, outcome.text
    assert "type: 'decimal(12,2)'" in outcome.text, outcome.text
    config["columns"][2]["type"] = "decimal(12,2)"
    project.add_table(config)
    outcome = project.build(SECOND, lake)
    assert outcome.success, outcome.text
    lake_rows, source_rows = _lake_rows(project, lake), source.rows()
    print(f"current: {len(lake_rows)} rows compared with SELECT *, "
          f"{len(set(lake_rows.items()) ^ set(source_rows.items()))} different")  # fmt: skip
    assert lake_rows == source_rows
    applied = {
        row["operation"]: row["n"]
        for row in project.rows(
            f"select operation, count(*) as n from {lake}_history "
            f"where business_date = '{SECOND}' group by operation"
        )
    }
    print(f"history: {applied} applied, the source's log committed {source.committed()}")
    assert applied == source.committed()

    # A date without a change lands an empty file: its run applies nothing, stops for none.
    assert main([*root, "capture", "--once", "--date", QUIET]) == 0
    assert [path.stat().st_size for path in _landed(project, QUIET, lake)] == [0]
    outcome = project.build(QUIET, lake)
    assert outcome.success, outcome.text
    assert _lake_rows(project, lake) == source.rows()


def test_postgresql_snapshot_then_stream_through_a_kill_and_a_server_restart(
    project: Any, postgres: Any, orders: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = captured_config(postgres.port, orders, TABLE)
    with contextlib.closing(LoopbackProxy(postgres.port)) as proxy:
        config["source"]["database"]["port"] = proxy.port
        project.add_table(config)
        _stream_through_a_kill_and_a_server_restart(
            project, _postgres_source(postgres, orders), config, proxy
        )
    offsets = json.loads(next((project.root / ".hashcdc" / "capture").glob("*.json")).read_text())
    assert offsets["snapshot"] == "done" and offsets["tables"][TABLE]["events"] > 20_000
    # The lost connections are kept with their time: `hashcdc status` shows the last.
    assert any("lost the server" in failure for failure in offsets["failures"]), offsets
    # `hashcdc status`: the capture's line, how far behind the server it is.
    capsys.readouterr()
    assert main(["--project-dir", str(project.root), "status"]) == 0
    out = capsys.readouterr().out
    assert "capture" in out and "done" in out and "bytes" in out, out


def test_mariadb_snapshot_then_binlog_through_a_kill_and_a_server_restart(
    project: Any, mariadb: Any, maria_orders: str
) -> None:
    config = captured_config(mariadb.port, maria_orders, MARIADB_TABLE)
    with contextlib.closing(LoopbackProxy(mariadb.port)) as proxy:
        config["source"]["database"].update(kind="mariadb", table=maria_orders, port=proxy.port)
        project.add_table(config)
        _stream_through_a_kill_and_a_server_restart(
            project, _mariadb_source(mariadb, maria_orders), config, proxy
        )


GROUP_LAKES = ("streamed_orders", "streamed_returns")  # their own: not the session's


def test_the_stream_applies_a_groups_capture_as_it_lands_through_engine_kills(
    project: Any, postgres: Any, orders: str, tmp_path: Path, engines_dir: Path
) -> None:
    """``hashcdc stream`` as a service over what ``hashcdc capture`` lands for two tables of
    one group (one slot), the engine SIGKILLed once the group's state model has started
    (before its commit) and again right after a batch's commit.

    The steps, each landed by ``capture --once`` while the stream runs: the snapshot
    (closed as its own date); inserts, updates, a key change, deletes, a large
    transaction, an unchanged TOASTed value and a column the config does not have (loaded
    without it); a truncate and an insert after it. After each restart ``current`` of both
    tables equals ``SELECT *`` on the source; closed by ``hashcdc run --date``, the date's
    history of each table is the net change between the two dates' source rows.
    """
    sources = [_postgres_source(postgres, name) for name in (orders, _orders_table(postgres))]
    for source, lake in zip(sources, GROUP_LAKES, strict=True):
        config = captured_config(postgres.port, source.table.split(".")[1], lake)
        config["source"]["database"]["slot"] = f"hashcdc_{orders}"  # one capture reads both
        project.add_table(
            config | {"group": "returns", "changes": {**config["changes"], "history": "net"}}
        )
    day, next_day = "2024-03-01", "2024-03-02"
    root = ["--project-dir", str(project.root)]
    env = hashcdc_environment(f"file://{tmp_path}/warehouse", "local")

    def land(business_date: str) -> None:
        assert main([*root, "capture", "--once", "--date", business_date]) == 0

    def lake_rows() -> list[dict[int, tuple[str, ...]]]:
        both = query_rows(project.root, env, " union all ".join(
            f"select '{lake}', {_LAKE_COLUMNS} from {lake}_current" for lake in GROUP_LAKES
        ))  # fmt: skip
        return [
            {int(row[1]): tuple(row[2:]) for row in both if row[0] == lake} for lake in GROUP_LAKES
        ]

    land(day)  # the snapshot
    stream = Lines(hashcdc(project.root, env, "stream", "--interval", "0.5"))
    wait_until(lambda: stream.text().count(f" {day}: applied:") >= 2, 300, "the snapshot")
    snapshot = [source.rows() for source in sources]
    assert lake_rows() == snapshot, stream.text()

    [log] = (tmp_path / "warehouse").rglob("returns_state/_delta_log")

    def commits() -> int:
        return len(list(log.glob("*.json")))

    def start_again() -> Lines:
        again = Lines(hashcdc(project.root, env, "stream", "--interval", "0.5"))
        wait_until(lambda: f" {next_day}: applied:" in again.text(), 300, "a batch after restart")
        return again

    # The next date's changes. Their batch first closes the snapshot's date; the engine is
    # killed once the group's state model has started, before any commit of it.
    for source in sources:
        sql, table = source.sql, source.table
        sql(f"insert into {table} values (51, 'new', 9.99, '2024-03-01', true, null)")
        sql(f"update {table} set amount = amount + 1 where id <= 10")
        sql(f"update {table} set id = 1000 where id = 11")  # the key changes
        sql(f"delete from {table} where id between 20 and 24")
    sql, table = sources[0].sql, sources[0].table
    bulk = sources[0].series.format(first=10001, last=12000)
    sql(f"insert into {table} select n, 'bulk', n, null, false, null from {bulk}")
    sql(
        f"update {table} set notes = (select string_agg(md5(random()::text), '') "
        "from generate_series(1, 300)) where id = 30"
    )
    sql(f"update {table} set item = 'renamed' where id = 30")  # notes stays out of line
    sql(f"alter table {table} add column channel text")
    sql(f"insert into {table} values (52, 'with channel', 2, null, true, null, 'app')")
    before, begun = commits(), models_begun(project.root, "returns_state")
    land(next_day)
    kill_the_engine_when(
        engines_dir,
        stream,
        lambda: models_begun(project.root, "returns_state") > begun,
        "the state model's start",
    )
    assert commits() == before, "the kill came after the commit: it tested nothing"
    killed, stream = stream, start_again()
    wait_until(lambda: lake_rows() == [s.rows() for s in sources], 300, "both tables' changes")
    said = killed.text() + stream.text()  # the killed batch may have said it already
    assert "channel" in said and "not loaded" in said, said

    # A truncate and an insert after it; the engine killed right after the batch's commit.
    sql(f"truncate table {table}")
    sql(f"insert into {table} values (60, 'after truncate', 1, null, null, null, null)")
    sources[1].sql(f"update {sources[1].table} set item = 'late' where id = 1")
    before = commits()
    land(next_day)
    kill_the_engine_when(engines_dir, stream, lambda: commits() > before, "the last commit")
    stream = start_again()
    wait_until(lambda: lake_rows() == [s.rows() for s in sources], 300, "the last changes")
    assert lake_rows()[0] == {60: ("after truncate", "1.00", "", "", "")}
    stream.process.send_signal(signal.SIGTERM)
    stream.process.wait(120)

    # Closed as a user closes it: each table's history is its net change of the date.
    status, out, err = finish(hashcdc(project.root, env, "run", "--date", next_day), 600)
    assert status == 0, out[-3000:] + err[-2000:]
    final = [source.rows() for source in sources]
    history = query_rows(project.root, env, " union all ".join(
        f"select '{lake}', operation, {_LAKE_COLUMNS} from {lake}_history "
        f"where business_date = '{next_day}'" for lake in GROUP_LAKES
    ))  # fmt: skip
    for lake, old, new in zip(GROUP_LAKES, snapshot, final, strict=True):
        changes = {(row[1], int(row[2])): tuple(row[3:]) for row in history if row[0] == lake}
        expected = {("I", k): v for k, v in new.items() if k not in old}
        expected |= {("U", k): v for k, v in new.items() if k in old and old[k] != v}
        deleted = {("D", k) for k in old if k not in new}
        assert {key: v for key, v in changes.items() if key[0] != "D"} == expected, lake
        assert {key for key in changes if key[0] == "D"} == deleted, lake


def test_a_service_capture_lands_an_empty_file_for_each_quiet_day(
    project: Any, postgres: Any, orders: str
) -> None:
    """Without --date, each day (UTC) with no change since the last one done gets a file.

    The days passed are simulated by the offsets' record of the last day done.
    """
    project.add_table(captured_config(postgres.port, orders, TABLE))
    root = ["--project-dir", str(project.root)]
    assert main([*root, "capture", "--once"]) == 0  # the snapshot: today's events
    today = dt.datetime.now(dt.UTC).date()
    days = [(today - dt.timedelta(days=n)).isoformat() for n in (3, 2, 1, 0)]
    offsets_file = next((project.root / ".hashcdc" / "capture").glob("*.json"))
    offsets = json.loads(offsets_file.read_text())
    assert offsets["quiet_through"] == days[3]
    offsets_file.write_text(json.dumps(offsets | {"quiet_through": days[0]}))
    assert main([*root, "capture", "--once"]) == 0
    sizes = {day: [path.stat().st_size for path in _landed(project, day)] for day in days}
    assert sizes[days[0]] == [] and sizes[days[1]] == [0] and sizes[days[2]] == [0], sizes
    assert len(sizes[days[3]]) == 1 and sizes[days[3]][0] > 0  # the snapshot, no empty file
    assert json.loads(offsets_file.read_text())["quiet_through"] == days[3]


def test_a_paused_table_is_held_then_released_whole_on_resume(
    project: Any, postgres: Any, orders: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--pause keeps a table's events out of the landing zone (the log still advances);
    --resume releases every one of them, once, into the date capture resumes on."""
    project.add_table(captured_config(postgres.port, orders, TABLE))
    root = ["--project-dir", str(project.root)]
    assert main([*root, "capture", "--once", "--date", FIRST]) == 0
    assert main([*root, "capture", "--pause", TABLE]) == 0
    postgres.psql(
        f"update public.{orders} set item = 'held' where id <= 10; "
        f"delete from public.{orders} where id = 50",
        SOURCE_DATABASE,
    )
    assert main([*root, "capture", "--once", "--date", SECOND]) == 0
    assert _landed(project, SECOND) == []
    capsys.readouterr()
    assert main([*root, "status"]) == 0
    status = capsys.readouterr().out
    assert "paused, 1" in status, status  # one transaction held, in one file

    assert main([*root, "capture", "--resume", TABLE]) == 0
    postgres.psql(
        f"insert into public.{orders} (id, item) values (51, 'after the pause')", SOURCE_DATABASE
    )
    assert main([*root, "capture", "--once", "--date", SECOND]) == 0
    events = [json.loads(line) for path in _landed(project, SECOND) for line in path.open()]
    assert sorted(event["op"] for event in events) == ["c", "d", *["u"] * 10]
    positions = {(event["source"]["commit_lsn"], event["source"]["lsn"]) for event in events}
    assert len(positions) == len(events)
    assert not list((project.root / ".hashcdc" / "capture" / "held").glob("*/*/*/*.json"))


def test_check_names_what_to_change(
    project: Any, postgres: Any, orders: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check: the server is ready; a table without a key is named with the fix."""
    postgres.psql(f"create table public.{orders}_nokey (id int, item text)", SOURCE_DATABASE)
    project.add_table(captured_config(postgres.port, orders, TABLE))
    root = ["--project-dir", str(project.root)]
    assert main([*root, "capture", "--check"]) == 0
    assert "ready: slot" in capsys.readouterr().out
    config = captured_config(postgres.port, f"{orders}_nokey", TABLE)
    config["columns"] = [c for c in config["columns"] if c["name"] in ("order_id", "item")]
    project.add_table(config)
    assert main([*root, "capture", "--check"]) == 2
    out = capsys.readouterr().out
    assert f"ALTER TABLE public.{orders}_nokey REPLICA IDENTITY FULL" in out, out


def test_the_snapshots_server_built_json_is_the_streams_in_every_page_range(
    project: Any, orders: Any, postgres: Any
) -> None:
    """The snapshot's JSON lines come from the server (``row_to_json`` in a ``COPY``); each
    value must be the one the stream gives the same text, and the page ranges read side by
    side must hold every row once. Then the third form (issue 41): the table captured,
    half of it updated in another column, both dates run: ``current`` equals ``SELECT *``
    row by row, each column cast to its configured type."""
    import io

    import psycopg2

    from hashcdc.capture.postgresql_source import (
        page_ranges,
        row_image,
        snapshot_copy,
        table_relation,
    )

    name = f"{orders}_types"
    postgres.psql(
        f"create type public.{name}_mood as enum ('sad', 'ok'); "
        f"create domain public.{name}_code as char(4); "
        f"create table public.{name} (id int primary key, small int2, big int8, o oid, "
        "n numeric(12,4), r real, d double precision, b boolean, t text, v varchar(10), "
        "day date, ts timestamp, tz timestamptz, u uuid, raw bytea, j jsonb, i interval, "
        f"c char(6), code public.{name}_code, mood public.{name}_mood, ip inet, m money, "
        "nn numeric, tm time(3), ttz timetz, bits bit(4), vbits varbit, js json, "
        "touch int default 0); "
        f"insert into public.{name} values (1, 1, 9007199254740993, 42, 12.5, 1.1, 'NaN', "
        """true, 'say "hi" \\ back', 'é', '2024-02-29', '2024-01-01 10:00:00.123456', """
        "'2024-01-01 10:00:00+02', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x00ff', "
        """'{"a": [1, 2.50]}', '1 day 02:00', 'ab', 'x', 'ok', '10.0.0.1', 12.5, 1.500, """
        "'10:00:00.5', '10:00:00+05:30', '1010', '101', "
        """'{"b" : 1.50}'), (2, null, null, null, null, null, null, null, """
        "null, null, null, null, null, null, null, null, null, null, null, null, null, null, "
        "null, null, null, null, null, null), (3, -32768, -1, 0, -0.0001, "
        "'-0', '-Infinity', false, e'line\\nbreak\\ttab\\x01ctl', '', '4713-01-01 BC', "
        "'infinity', '1970-01-01 00:00:00+00', null, '', 'null', '-1 mons', '', '', 'sad', "
        "'::1/128', -0.01, 'NaN', '23:59:59.999', '00:00:00-12', '0000', '', '[]'); "
        f"insert into public.{name} (id, t) select n, repeat('x', 100) from "
        "generate_series(4, 3000) n",
        SOURCE_DATABASE,
    )
    connection = psycopg2.connect(
        host="127.0.0.1", port=postgres.port, dbname=SOURCE_DATABASE, user="hashcdc"
    )
    connection.autocommit = True
    try:
        relation = table_relation(connection, "public", name)
        # The stream sends each value as its type's output function writes it: the text
        # the server sends a client, taken as it comes (no client-side conversion).
        as_sent = psycopg2.extensions.new_type(
            tuple({column.type_oid for column in relation.columns}), "AS_SENT", lambda v, _: v
        )
        with connection.cursor() as cursor:
            psycopg2.extensions.register_type(as_sent, cursor)
            cursor.execute(f"select * from public.{name}")
            streamed = {values[0]: row_image(relation, values) for values in cursor.fetchall()}
        tail = connection.cursor().mogrify("%s", (',"op":"r"}',)).decode()
        ranges = page_ranges(connection, relation, 3)
        assert len(ranges) == 3 and ranges[0][0] == 0 and ranges[-1][1] is None, ranges
        snapshot: list[dict[str, Any]] = []
        for pages in ranges:
            out = io.BytesIO()
            with connection.cursor() as cursor:
                cursor.copy_expert(snapshot_copy(relation, tail, pages), out)
                assert cursor.rowcount == len(out.getvalue().splitlines()) > 0
            snapshot += [json.loads(line)["after"] for line in out.getvalue().splitlines()]
    finally:
        connection.close()
    assert sorted(after["id"] for after in snapshot) == list(range(1, 3001))
    by_id = {after["id"]: after for after in snapshot}
    for key in (1, 2, 3, 4):
        assert by_id[key] == streamed[str(key)], key
    assert by_id[1]["big"] == 9007199254740993 and by_id[1]["d"] == "NaN", by_id[1]
    assert by_id[3]["t"] == "line\nbreak\ttab\x01ctl", by_id[3]
    # Issue 41: char(n) keeps its padding (a cast to text strips it), inet its own form.
    assert (by_id[1]["c"], by_id[1]["code"], by_id[1]["ip"]) == ("ab    ", "x   ", "10.0.0.1")

    # The third form: through capture and a run, against SELECT * as the server sends it.
    config = captured_config(postgres.port, name, name)
    config["columns"] = [
        {"name": column, "type": POSTGRESQL_LAKE_TYPES.get(column, "string"), "key": column == "id"}
        for column in by_id[1]
    ]
    project.add_table(config)
    root = ["--project-dir", str(project.root)]
    assert main([*root, "capture", "--once", "--date", FIRST]) == 0
    postgres.psql(f"update public.{name} set touch = 1 where id % 2 = 0", SOURCE_DATABASE)
    assert main([*root, "capture", "--once", "--date", SECOND]) == 0
    assert main([*root, "run", "--date", FIRST, SECOND, "--select", name]) == 0
    lake = {row["id"]: row for row in project.rows(f"select * from {name}_current")}
    selected = {int(key): row for key, row in _postgresql_select_all(postgres.port, name).items()}
    assert sorted(lake) == sorted(selected) == list(range(1, 3001))
    unequal = {
        (key, column): (lake[key][column], text)
        for key, row in selected.items()
        for column, text in row.items()
        if not _same_as_postgresql_selected(lake[key][column], text, column)
    }
    assert not unequal, unequal


# The type each column of the PostgreSQL types table is configured with in the lake
# (text where an edge value has no lake type: BC dates, infinity, NaN in numeric).
POSTGRESQL_LAKE_TYPES = {
    "id": "int",
    "small": "smallint",
    "big": "bigint",
    "o": "bigint",
    "n": "decimal(12,4)",
    "r": "float",
    "d": "double",
    "b": "boolean",
    "touch": "int",
}


def _postgresql_select_all(port: int, name: str) -> dict[str, dict[str, Any]]:
    """``SELECT *`` as the server sends it: each value its type's text, keyed by id."""
    connection = psycopg2.connect(host=LOOPBACK, port=port, dbname=SOURCE_DATABASE, user="hashcdc")
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"select * from public.{name} limit 0")
            oids = tuple({column.type_code for column in cursor.description})
            as_sent = psycopg2.extensions.new_type(oids, "AS_SENT", lambda v, _: v)
            psycopg2.extensions.register_type(as_sent, cursor)
            cursor.execute(f"select * from public.{name}")
            names = [column.name for column in cursor.description]
            return {values[0]: dict(zip(names, values, strict=True)) for values in cursor}
    finally:
        connection.close()


def _same_as_postgresql_selected(value: Any, text: str | None, column: str) -> bool:
    """Whether the lake's value is the server's text ``text``, by the column's lake type."""
    if text is None or value is None:
        return text is None and value is None
    lake_type = POSTGRESQL_LAKE_TYPES.get(column, "string")
    if lake_type == "boolean":
        return value == (text == "t")
    if lake_type != "string":
        return _same_number(lake_type, value, text)
    return value == text


def _same_number(lake_type: str, value: Any, text: str) -> bool:
    """Whether a lake number is the one the server's text writes (a ``float`` at single
    precision, NaN as NaN; by value: -0.0 is 0.0 in the lake, one value, as the hashes'
    canonical form has it)."""
    if lake_type in ("float", "double"):
        number = float(text)
        if lake_type == "float":
            number = struct.unpack("f", struct.pack("f", number))[0]
        return (math.isnan(number) and math.isnan(value)) or value == number
    return decimal.Decimal(str(value)) == decimal.Decimal(text)


def test_a_dropped_slot_stops_with_the_way_back(
    project: Any, postgres: Any, orders: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Never silent loss: a slot dropped under the capture stops it, naming what to do."""
    project.add_table(captured_config(postgres.port, orders, TABLE))
    root = ["--project-dir", str(project.root)]
    assert main([*root, "capture", "--once", "--date", FIRST]) == 0
    postgres.psql(f"select pg_drop_replication_slot('hashcdc_{orders}')", SOURCE_DATABASE)
    capsys.readouterr()
    assert main([*root, "capture", "--once", "--date", SECOND]) == 2
    err = capsys.readouterr().err
    assert f"the replication slot hashcdc_{orders} is gone" in err and "Re-snapshot" in err, err
    assert "Traceback" not in err


def test_a_keyless_table_and_an_array_column(
    project: Any, postgres: Any, orders: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """REPLICA IDENTITY FULL: an update's before image is the whole row; an array is named."""
    keyless = f"{orders}_keyless"
    postgres.psql(
        f"create table public.{keyless} (id int, item text, tags text[]); "
        f"alter table public.{keyless} replica identity full; "
        f"insert into public.{keyless} values (1, 'a', '{{x}}')",
        SOURCE_DATABASE,
    )
    config = captured_config(postgres.port, keyless, TABLE)
    config["columns"] = [
        {"name": "order_id", "source_name": "id", "type": "int"},
        {"name": "item", "type": "string"},
    ]
    project.add_table(config)
    root = ["--project-dir", str(project.root)]
    assert main([*root, "capture", "--once", "--date", FIRST]) == 0
    postgres.psql(f"update public.{keyless} set item = 'b'", SOURCE_DATABASE)
    assert main([*root, "capture", "--once", "--date", SECOND]) == 0
    (update,) = [json.loads(line) for p in _landed(project, SECOND) for line in p.open()]
    assert update["op"] == "u"
    assert update["before"] == {"id": 1, "item": "a", "tags": "{x}"}
    assert update["after"]["item"] == "b"

    config["columns"].append({"name": "tags", "type": "string"})
    project.add_table(config)
    capsys.readouterr()
    assert main([*root, "capture", "--check"]) == 2
    out = capsys.readouterr().out
    assert f"column 'tags' of public.{keyless} is text[], an array" in out, out


def test_a_purged_binary_log_stops_with_the_way_back(
    project: Any, mariadb: Any, maria_orders: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = captured_config(mariadb.port, maria_orders, TABLE)
    config["source"]["database"].update(kind="mariadb", table=maria_orders)
    project.add_table(config)
    root = ["--project-dir", str(project.root)]
    assert main([*root, "capture", "--once", "--date", FIRST]) == 0
    captured_in = mariadb.sql("show master status").split("\t")[0]  # the snapshot's log
    mariadb.sql("flush binary logs; flush binary logs")
    newest = mariadb.sql("show master status").split("\t")[0]

    def purged() -> bool:
        # MariaDB keeps a log until its binlog checkpoint is written (a moment later).
        mariadb.sql(f"purge binary logs to '{newest}'")
        return captured_in not in mariadb.sql("show binary logs")

    _wait_for(purged, 30, f"{captured_in} purged", project)
    capsys.readouterr()
    assert main([*root, "capture", "--once", "--date", SECOND]) == 2
    err = capsys.readouterr().err
    assert "is purged" in err and "Re-snapshot" in err, err


def _schema_changes(project: Any, business_date: str, name: str = TABLE) -> list[dict[str, Any]]:
    folder = project.root / "landing" / name / business_date
    return [
        json.loads(line)
        for path in sorted(folder.glob("_schema-*.json"))
        for line in path.read_text().splitlines()
    ]


def _shape_config(source: Any, table: str, kind: str, name: str) -> dict[str, Any]:
    config = captured_config(source.port, table, name)
    config["source"]["database"].update(kind=kind, table=table)
    return config


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_shape_changes_land_as_schema_change_events(
    project: Any,
    request: pytest.FixtureRequest,
    kind: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A column dropped, then the table renamed: schema-change events, and no event lost.

    PostgreSQL follows a renamed table (its relation id stays); MariaDB's log names the
    rows by the new name, so capture stops after landing the rename. Either way the next
    start asks for the new name, and then goes on from where it stopped.
    """
    server = request.getfixturevalue("postgres" if kind == "postgresql" else "mariadb")
    table = request.getfixturevalue("orders" if kind == "postgresql" else "maria_orders")
    name = f"shape_{kind}"
    if kind == "postgresql":
        sql, renamed = (lambda s: server.psql(s, SOURCE_DATABASE)), f"public.{table}_v2"
    else:
        sql, renamed = (lambda s: server.sql(s, SOURCE_DATABASE)), f"{SOURCE_DATABASE}.{table}_v2"
    config = _shape_config(server, table, kind, name)
    project.add_table(config)
    root = ["--project-dir", str(project.root)]
    assert main([*root, "capture", "--once", "--date", FIRST]) == 0

    def landed_items() -> list[tuple[str, Any]]:
        landed = [
            json.loads(line) for path in _landed(project, SECOND, name) for line in path.open()
        ]
        return [(e["op"], (e["after"] or {}).get("item")) for e in landed]

    capture = _capture(project, "--date", SECOND)
    try:
        log = project.root / "capture.log"
        _wait_for(lambda: "streaming from" in log.read_text(), 60, "streaming", project)
        sql(f"alter table {table} drop column notes")
        sql(f"update {table} set item = 'after the drop' where id = 1")
        _wait_for(lambda: landed_items(), 60, "the update after the drop", project)
        sql(f"alter table {table} rename to {table}_v2")
        sql(f"insert into {table}_v2 values (60, 'after the rename', 1, null, true)")
        if kind == "postgresql":  # followed: the insert under the new name lands
            _wait_for(lambda: len(landed_items()) == 2, 60, "the insert after", project)
            capture.send_signal(signal.SIGTERM)
            assert capture.wait(timeout=60) == 0
        else:  # the rows are named by the new name from the rename: stopped there
            assert capture.wait(timeout=60) == 2
    finally:
        if capture.poll() is None:
            capture.kill()
    log = (project.root / "capture.log").read_text()
    assert "Traceback" not in log, log
    assert ("still captured" if kind == "postgresql" else "nothing is lost") in log, log
    events = _schema_changes(project, SECOND, name)
    changes = [change for event in events for change in event["changes"]]
    assert [(c["change"], c.get("column")) for c in changes] == [
        ("column dropped", "notes"),
        ("table renamed", None),
    ], changes
    assert (changes[1]["from"], changes[1]["to"]) == (renamed.removesuffix("_v2"), renamed)
    assert events[0]["tableChanges"][0]["type"] == "ALTER"
    assert "notes" not in [c["name"] for c in events[0]["tableChanges"][0]["table"]["columns"]]

    # The next start asks for the new name (the old one is gone), then goes on.
    capsys.readouterr()
    assert main([*root, "capture", "--once", "--date", SECOND]) == 2
    err = capsys.readouterr().err
    assert f"renamed to {renamed}: set source.database.table: {table}_v2" in err, err
    config["source"]["database"]["table"] = f"{table}_v2"
    config["columns"][-1]["removed"] = SECOND
    project.add_table(config)
    assert main([*root, "capture", "--once", "--date", SECOND]) == 0
    assert landed_items() == [("u", "after the drop"), ("c", "after the rename")]

    # Renamed again while capture is down, with a change before and after: once the config
    # names it, the start finds it and the log's changes under both names land.
    sql(f"update {table}_v2 set item = 'before the second rename' where id = 2")
    sql(f"alter table {table}_v2 rename to {table}_v3")
    sql(f"insert into {table}_v3 values (61, 'after the second rename', 1, null, true)")
    config["source"]["database"]["table"] = f"{table}_v3"
    project.add_table(config)
    assert main([*root, "capture", "--once", "--date", SECOND]) == 0
    assert landed_items()[2:] == [
        ("u", "before the second rename"),
        ("c", "after the second rename"),
    ]
    last = _schema_changes(project, SECOND, name)[-1]["changes"]
    assert [(c["change"], c["to"]) for c in last] == [
        ("table renamed", f"{renamed}".replace("_v2", "_v3"))
    ]


# Every type a captured MariaDB table may hold (SET and geometry are refused by --check),
# with the rows each type's edges give; a few random rows are added by a seeded draw.
MARIADB_TYPES = {
    "c": "char(5)",
    "bin": "binary(4)",
    "vb": "varbinary(6)",
    "bits": "bit(10)",
    "e": "enum('sad','ok')",
    "y": "year",
    "dt6": "datetime(6)",
    "ts": "timestamp(3) null",
    "d65": "decimal(65,30)",
    "j": "json",
    "tu": "tinyint unsigned",
    "iu": "int unsigned",
    "bu": "bigint unsigned",
    "bi": "bigint",
    "f": "float",
    "dbl": "double",
    "tm": "time(3)",
    "day": "date",
    "txt": "text",
}
# The type each column is configured with in the lake (text where no type holds it all).
MARIADB_LAKE_TYPES = {
    "y": "int",
    "dt6": "timestamp",
    "ts": "timestamp",
    "tu": "smallint",
    "iu": "bigint",
    "bu": "decimal(20,0)",
    "bi": "bigint",
    "f": "float",
    "dbl": "double",
    "day": "date",
}
MARIADB_EDGES = [
    "'ab', 'a', '', b'0000000101', 'ok', 2024, '2024-02-29 23:59:59.999999', "
    "'2024-03-31 01:30:00.125', 1.5, '{\"a\": [1, 2.50]}', 255, 4294967295, "
    "18446744073709551615, -9223372036854775808, -0.0, 1e308, '-838:59:59.000', "
    "'1000-01-01', 'é \\\\t'",
    "'', x'00', x'00ff', b'1111111111', 'sad', 1901, '1000-01-01 00:00:00', "
    "'1970-01-01 00:00:01', '-0.000000000000000000000000000001', '[]', 0, 0, 0, "
    "9223372036854775807, 3.4e38, -1e-308, '838:59:59.999', '9999-12-31', ''",
    ", ".join(["null"] * len(MARIADB_TYPES)),
]


def test_mariadb_a_value_lands_in_one_form_whichever_path_read_it(
    project: Any, mariadb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41: a value lands in one form, the form ``SELECT *`` shows, whichever path
    read it.

    Every type, its edges and a seeded random draw; the server's time zone is not UTC
    (a TIMESTAMP read by the snapshot and by the log must agree) and its sql_mode pads
    CHAR values (PAD_CHAR_TO_FULL_LENGTH: the log holds them without padding). Every row
    is snapshotted, then half of them updated in another column only, so the stream's
    after image carries the same values: the two forms must be equal value for value.
    Then both dates run, and ``current`` (half of it from the snapshot, half from the
    stream, each column cast to its configured type) must equal ``SELECT *``.
    """
    import random

    seed = random.randrange(2**32)
    draw = random.Random(seed)
    name = f"types_{uuid.uuid4().hex[:8]}"
    mariadb.sql(f"create database if not exists {SOURCE_DATABASE}")
    columns = ", ".join(f"{column} {kind}" for column, kind in MARIADB_TYPES.items())
    rows = [*MARIADB_EDGES]
    for _ in range(9):
        rows.append(
            f"'{draw.choice(['x', 'ab c', ''])}', x'{draw.randbytes(draw.randint(1, 4)).hex()}', "
            f"x'{draw.randbytes(draw.randint(0, 6)).hex()}', {draw.randrange(1024)}, 'ok', "
            f"{draw.randint(1901, 2155)}, '2024-01-0{draw.randint(1, 9)} 10:00:00."
            f"{draw.randrange(10**6):06d}', '2024-06-01 12:00:00.{draw.randrange(1000):03d}', "
            f"{draw.randint(-(10**30), 10**30)}.{draw.randrange(10**30):030d}, "
            f"'{{\"n\": {draw.randint(-99, 99)}}}', {draw.randrange(256)}, "
            f"{draw.randrange(2**32)}, {draw.randrange(2**64)}, "
            f"{draw.randint(-(2**63), 2**63 - 1)}, "
            f"{draw.uniform(-1e6, 1e6)}, {draw.uniform(-1e300, 1e300)}, "
            f"'{draw.randint(-838, 838)}:{draw.randrange(60):02d}:00', "
            f"'{draw.randint(1000, 9999)}-0{draw.randint(1, 9)}-1{draw.randint(0, 9)}', 'r'"
        )
    values = ", ".join(f"({number}, 0, {row})" for number, row in enumerate(rows, 1))
    mariadb.sql(
        f"create table {name} (id int primary key, touch int, {columns}); "
        f"insert into {name} values {values}",
        SOURCE_DATABASE,
    )
    monkeypatch.setenv("SHOP_USER", "hashcdc")
    config = captured_config(mariadb.port, name, name)
    config["source"]["database"].update(kind="mariadb", table=name)
    config["columns"] = [
        {"name": "id", "type": "int", "key": True},
        {"name": "touch", "type": "int"},
        *(
            {"name": column, "type": MARIADB_LAKE_TYPES.get(column, "string")}
            for column in MARIADB_TYPES
        ),
    ]
    project.add_table(config)
    root = ["--project-dir", str(project.root)]
    mode = mariadb.sql("select @@global.sql_mode").strip()
    mariadb.sql("set global time_zone = '+05:00', global sql_mode = 'PAD_CHAR_TO_FULL_LENGTH'")
    try:
        assert main([*root, "capture", "--once", "--date", FIRST]) == 0
        mariadb.sql(f"update {name} set touch = 1 where id % 2 = 0", SOURCE_DATABASE)
        assert main([*root, "capture", "--once", "--date", SECOND]) == 0
    finally:
        mariadb.sql(f"set global time_zone = 'SYSTEM', global sql_mode = '{mode}'")

    def afters(business_date: str) -> dict[int, dict[str, Any]]:
        events = [json.loads(line) for path in _landed(project, business_date, name)
                  for line in path.read_text().splitlines()]  # fmt: skip
        return {event["after"]["id"]: event["after"] for event in events}

    snapshot, stream = afters(FIRST), afters(SECOND)
    assert sorted(snapshot) == list(range(1, len(rows) + 1))
    assert sorted(stream) == list(range(2, len(rows) + 1, 2))
    differing = {
        (key, column): (snapshot[key][column], stream[key][column])
        for key in stream
        for column in MARIADB_TYPES
        if snapshot[key][column] != stream[key][column]
    }
    assert not differing, f"seed {seed}: {differing}"

    # The third form: current, after a run of both dates, against SELECT *.
    assert main([*root, "run", "--date", FIRST, SECOND, "--select", name]) == 0
    lake = {
        row["id"]: row
        for row in project.rows(
            f"select *, cast(dt6 as string) as dt6_text, cast(ts as string) as ts_text "
            f"from {name}_current"
        )
    }
    source = _mariadb_select_all(mariadb.port, name)
    assert sorted(lake) == sorted(source) == list(range(1, len(rows) + 1))
    unequal = {
        (key, column): (lake[key][column], text)
        for key, values in source.items()
        for column, text in values.items()
        if not _same_as_selected(MARIADB_TYPES[column], lake[key], column, text)
    }
    assert not unequal, f"seed {seed}: {unequal}"


def _mariadb_select_all(port: int, name: str) -> dict[int, dict[str, Any]]:
    """``SELECT *`` as the server sends it (its text; bytes for binary types), in UTC."""
    from pymysql.converters import encoders  # the values' decoders left out: text comes

    connection = pymysql.connect(
        host=LOOPBACK, port=port, user="hashcdc", database=SOURCE_DATABASE, conv=dict(encoders)
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute("set time_zone = '+00:00'")
            cursor.execute(f"select {', '.join(['id', *MARIADB_TYPES])} from {name}")
            return {
                int(values[0]): dict(zip(MARIADB_TYPES, values[1:], strict=True))
                for values in cursor.fetchall()
            }
    finally:
        connection.close()


def _same_as_selected(source_type: str, row: dict[str, Any], column: str, text: Any) -> bool:
    """Whether the lake's value of a column is the server's ``SELECT *`` value ``text``.

    By docs/capture.md's type table: bytes as UTF-8 text (else hex), BIT as its binary
    digits, numbers by value (FLOAT at single precision), times by instant.
    """
    value = row[column]
    if text is None or value is None:
        return text is None and value is None
    if source_type.startswith("bit("):
        width = source_type.removeprefix("bit(").split(")")[0]
        return value == format(int.from_bytes(text, "big"), f"0{width}b")
    if isinstance(text, bytes):
        try:
            return value == text.decode("utf-8")
        except UnicodeDecodeError:
            return value == text.hex()
    lake_type = MARIADB_LAKE_TYPES.get(column, "string")
    if lake_type == "timestamp":
        return dt.datetime.fromisoformat(row[f"{column}_text"]) == dt.datetime.fromisoformat(text)
    if lake_type == "date":
        return value == dt.date.fromisoformat(text)
    if lake_type != "string":
        return _same_number(lake_type, value, text)
    return value == text
