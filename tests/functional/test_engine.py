"""The warm engine, driven as a user drives it: ``hashcdc`` processes are its thin clients.

Each test's project has its own warehouse and embedded metastore (not the test session's),
and the engine its test starts is stopped when the test ends. The first command starts
the engine; commands side by side are served (a query while a run goes; two runs, the
second after the first); a client SIGKILLed mid-date leaves the engine to finish the date,
so readers see the previous state or the new one, never a mix, and the rerun is clean;
an engine SIGKILLed mid-date is replaced by the next command, whose rerun is clean too;
an idle engine exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from servers import (
    alive,
    engine_pids,
    finish,
    generate_tables,
    hashcdc,
    hashcdc_environment,
    parse_snapshot,
    snapshot_sql,
    wait_until,
)

from hashcdc.runtime.local_servers import free_port

DATES = ["2024-03-01", "2024-03-02", "2024-03-03"]


def _run(root: Path, env: dict[str, str], *args: str, seconds: float = 600) -> tuple[str, str]:
    status, out, err = finish(hashcdc(root, env, *args), seconds)
    assert status == 0, f"hashcdc {' '.join(args)}: {status}\n{out[-3000:]}\n{err[-3000:]}"
    return out, err


def _read_until(process: subprocess.Popen, marker: str, seconds: float) -> list[str]:
    lines: list[str] = []

    def seen() -> bool:
        lines.append(process.stdout.readline())
        assert process.poll() is None or lines[-1], "".join(lines)[-3000:]
        return marker in lines[-1]

    wait_until(seen, seconds, marker)
    return lines


def _engine_pid(engines: Path) -> int:
    running = [pid for pid in engine_pids(engines) if alive(pid)]
    assert len(running) == 1, running
    return running[0]


def test_commands_side_by_side_are_served_by_one_engine(
    project: Any, tmp_path: Path, engines_dir: Path
) -> None:
    tables = {"eng_a": "full", "eng_b": "delta"}
    generate_tables(project.spark, project.root, f"file://{tmp_path}/landing", tables, DATES, 300)
    env = hashcdc_environment(f"file://{tmp_path}/warehouse", "local")
    out, _ = _run(project.root, env, "engine", "status")
    assert "engine: not running" in out
    # The engine serves the project's metrics while it runs.
    port = free_port()
    settings = project.root / "dbt_project.yml"
    dbt_project = yaml.safe_load(settings.read_text())
    dbt_project["vars"]["hashcdc_metrics_port"] = port
    settings.write_text(yaml.safe_dump(dbt_project, sort_keys=False))

    # Two runs at once, of different tables: one client starts the engine, both are served.
    first = hashcdc(project.root, env, "run", "--date", DATES[0], "--select", "eng_a")
    second = hashcdc(project.root, env, "run", "--date", DATES[0], "--select", "eng_b")
    done = [finish(first, 600), finish(second, 600)]
    assert [status for status, _, _ in done] == [0, 0], done
    errors = [err for _, _, err in done]
    assert sum("starting the engine" in err for err in errors) == 1, errors
    assert any("waiting for the engine's running command" in err for err in errors), errors
    pid = _engine_pid(engines_dir)

    # A query while a run of two dates goes on: answered before the run ends.
    run = hashcdc(project.root, env, "run", "--date", *DATES[1:], "--select", "eng_a")
    _read_until(run, f"business date {DATES[1]}", 300)
    out, _ = _run(project.root, env, "query", "select count(*) as n from eng_b_current")
    assert out.splitlines()[0] == "n" and int(out.splitlines()[1]) > 0
    assert run.poll() is None, "the run ended before the query was answered"
    status, out, err = finish(run, 600)
    assert status == 0, out[-3000:] + err[-3000:]

    # A failing command is the command's failure: one line, status 2; the engine goes on.
    status, out, err = finish(hashcdc(project.root, env, "query", "select * from no_such"), 120)
    assert status == 2 and "no_such" in err and "Traceback" not in err, err
    out, _ = _run(project.root, env, "status")
    assert "eng_a" in out and f"engine: pid {pid}, up " in out, out
    assert _engine_pid(engines_dir) == pid
    metrics = _scrape(port)
    runs = 'hashcdc_runs_total{command="build",status="success",table="%s"}'
    assert f"{runs % 'eng_a'} 3.0" in metrics and f"{runs % 'eng_b'} 1.0" in metrics, metrics
    # A process of its own (plain dbt too) meets the engine's metastore: told what to do.
    status, out, err = finish(hashcdc(project.root, env, "--no-engine", "status"), 120)
    assert status == 2 and "held by the project's hashcdc engine" in err, err
    assert "hashcdc engine stop" in err

    out, _ = _run(project.root, env, "engine", "stop")
    assert "engine stopped" in out
    assert not alive(pid)
    assert not list(engines_dir.glob("*.sock"))
    with pytest.raises(OSError):
        _scrape(port)


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as response:
        return str(response.read().decode())


def _oracle(project: Any, table: str) -> list[list[tuple[str, str]]]:
    """Current and history of ``table`` after each date, built in the test's own session."""
    relations = [f"{table}_current", f"{table}_history"]
    snapshots = []
    for business_date in DATES:
        outcome = project.build(business_date, table)
        assert outcome.success, outcome.text
        rows = project.spark.sql(snapshot_sql(relations)).collect()
        snapshots.append(sorted((row.relation, row.row) for row in rows))
    return snapshots


def _current(snapshot: list[tuple[str, str]], table: str) -> list[tuple[str, str]]:
    return [pair for pair in snapshot if pair[0] == f"{table}_current"]


def test_killed_clients_and_a_killed_engine_leave_whole_dates(
    project: Any, tmp_path: Path, engines_dir: Path
) -> None:
    table = "eng_k"
    generate_tables(
        project.spark, project.root, f"file://{tmp_path}/landing", {table: "full"}, DATES, 500
    )
    expected = _oracle(project, table)
    whole = [_current(snapshot, table) for snapshot in expected]
    env = hashcdc_environment(f"file://{tmp_path}/warehouse", "local")
    relations = [f"{table}_current", f"{table}_history"]
    _run(project.root, env, "run", "--date", DATES[0])
    pid = _engine_pid(engines_dir)

    # The client of the second date is killed at two instants: the engine finishes the
    # date; readers meanwhile see the first date's state or the second's, whole.
    for delay in (0.0, 3.0):
        client = hashcdc(project.root, env, "run", "--date", DATES[1])
        _read_until(client, f"business date {DATES[1]}", 300)
        time.sleep(delay)
        os.killpg(client.pid, signal.SIGKILL)
        client.wait()
        seen = []
        while True:
            out, _ = _run(project.root, env, "query", snapshot_sql([f"{table}_current"]))
            seen.append(parse_snapshot(out))
            status, _ = _run(project.root, env, "engine", "status")
            if ", idle," in status:
                break
        assert all(s in (whole[0], whole[1]) for s in seen), [len(s) for s in seen]
    out, _ = _run(project.root, env, "run", "--date", DATES[1])
    assert "success" in out
    out, _ = _run(project.root, env, "query", snapshot_sql(relations))
    assert parse_snapshot(out) == expected[1]
    assert _engine_pid(engines_dir) == pid

    # The engine is killed in the middle of the third date: the client says so; the next
    # command starts a new engine, and the rerun is clean.
    client = hashcdc(project.root, env, "run", "--date", DATES[2])
    _read_until(client, f"business date {DATES[2]}", 300)
    time.sleep(2.0)
    os.kill(pid, signal.SIGKILL)
    status, out, err = finish(client, 300)
    assert status == 2 and "the engine ended while it ran the command" in err, err
    out, err = _run(project.root, env, "run", "--date", DATES[2])
    assert "starting the engine" in err
    assert _engine_pid(engines_dir) != pid
    out, _ = _run(project.root, env, "query", snapshot_sql(relations))
    assert parse_snapshot(out) == expected[2]

    # An idle engine exits by itself, and removes its socket and record.
    _run(project.root, env, "engine", "stop")
    out, _ = _run(project.root, env, "engine", "start", "--idle-minutes", "0.05")
    started = _engine_pid(engines_dir)
    assert f"engine: pid {started}" in out and "exits after 0.05 min idle" in out
    wait_until(lambda: not alive(started), 120, "the idle engine's exit")
    assert not [p for p in engines_dir.iterdir() if p.suffix in (".sock", ".json")]
