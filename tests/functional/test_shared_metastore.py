"""A shared Hive metastore in PostgreSQL: runs, queries and dbt docs side by side.

Every hashcdc process here is a real one (its own JVM) on the ``shared`` target: a private
PostgreSQL server holds the metastore, the warehouse and the landing zone are ``file:``
URIs outside the project folder. The same tables also run in the test session's embedded
Spark, date by date, as the reference for what the processes must read.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from servers import (
    Lines,
    dbt,
    finish,
    generate_tables,
    hashcdc,
    hashcdc_environment,
    parse_snapshot,
    snapshot_sql,
    wait_until,
)

DATES = ["2023-05-01", "2023-05-02", "2023-05-03", "2023-05-04", "2023-05-05", "2023-05-06"]
OTHER_DATES = DATES[:3]
RUNNING, OTHER = "sm_running", "sm_other"


def _relations(table: str) -> list[str]:
    return [f"{table}_current", f"{table}_history", f"{table}_rejects"]


def _local_snapshots(project: Any, tables: list[str]) -> list[list[tuple[str, str]]]:
    """Each date's rows of ``tables`` after it ran in the test session's embedded Spark."""
    relations = [r for t in tables for r in _relations(t)]
    snapshots = []
    for business_date in DATES:
        outcome = project.build(business_date, *tables)
        assert outcome.success, outcome.text
        rows = project.spark.sql(snapshot_sql(relations)).collect()
        snapshots.append(sorted((row.relation, row.row) for row in rows))
    return snapshots


def test_runs_queries_and_docs_side_by_side(project: Any, postgres: Any, tmp_path: Path) -> None:
    landing = f"file://{tmp_path}/landing"
    tables = {RUNNING: "full", OTHER: "delta"}
    generate_tables(project.spark, project.root, landing, tables, DATES, records=300)
    expected = _local_snapshots(project, [RUNNING])
    current = f"{RUNNING}_current"
    per_date = [[row for row in snapshot if row[0] == current] for snapshot in expected]

    # Processes of their own, on a shared metastore (not one engine that serves them all).
    env = hashcdc_environment(
        f"file://{tmp_path}/warehouse", "shared", HASHCDC_ENGINE="off", **postgres.environment()
    )
    running = hashcdc(project.root, env, "run", "--date", *DATES, "--select", RUNNING)
    # The other table's dates run beside the first half of the running one's.
    other = hashcdc(project.root, env, "run", "--date", *OTHER_DATES, "--select", OTHER)
    try:
        # Once the first date is in, the run goes on for five more: read while it does.
        lines: list[str] = []

        def first_date_done() -> bool:
            lines.append(running.stdout.readline())
            assert running.poll() is None, "".join(lines)[-3000:]
            return any("Completed successfully" in line for line in lines)

        wait_until(first_date_done, 300, f"the first date of the {RUNNING} run")
        query = hashcdc(project.root, env, "query", snapshot_sql([current]))
        same_table = hashcdc(project.root, env, "run", "--date", DATES[-1], "--select", RUNNING)
        docs = dbt(project.root, env, "docs", "generate", "--target-path", "docs_target")
        status, out, err = finish(query, 300)
        query_ended_during_run = running.poll() is None
        assert status == 0, err
        seen = parse_snapshot(out)
        # A consistent snapshot of one processed date, never a mix of two.
        assert seen in per_date, seen[:3]

        status, out, err = finish(same_table, 300)
        refused_during_run = running.poll() is None
        assert status == 2
        messages = [line for line in err.splitlines() if line.startswith("hashcdc:")]
        assert len(messages) == 1, err[-2000:]
        assert (
            f"table '{RUNNING}' is being processed by another run (pid {running.pid}"
            in (messages[0])
        )
        assert "Traceback" not in err
        status, out, err = finish(docs, 300)
        docs_ended_during_run = running.poll() is None
        assert status == 0, out[-3000:] + err[-2000:]
        catalog = json.loads((project.root / "docs_target" / "catalog.json").read_text())
        name = yaml.safe_load((project.root / "dbt_project.yml").read_text())["name"]
        columns = catalog["nodes"][f"model.{name}.{RUNNING}_history"]["columns"]
        assert "business_date" in columns
        assert query_ended_during_run and refused_during_run and docs_ended_during_run, (
            "the run ended before the readers: give it more dates"
        )
    finally:
        results = {name: finish(p, 900) for name, p in (("running", running), ("other", other))}
    for name, (status, out, err) in results.items():
        assert status == 0, f"{name}: {out[-6000:]}{err[-2000:]}"

    # One reader for the final tables and the audit (a process costs a JVM's start).
    final = hashcdc(
        project.root,
        env,
        "query",
        snapshot_sql([*_relations(RUNNING), *_relations(OTHER), "cdc_runs"]),
    )
    status, out, err = finish(final, 300)
    assert status == 0, err
    seen = parse_snapshot(out)
    assert [row for row in seen if row[0].startswith(RUNNING)] == expected[-1]
    assert {row[0] for row in seen} >= {f"{OTHER}_current", f"{OTHER}_history"}

    # Both runs appended their audit rows side by side, date after date: every one landed
    # (issue 25: a shared staging folder made one of two appends fail).
    audit = Counter(
        (record["table_name"], record["status"])
        for record in (json.loads(row) for relation, row in seen if relation == "cdc_runs")
    )
    # Every date successful in each, and the refused run recorded nothing. (Other tests' tables
    # share this metastore's audit table: only these two are counted.)
    ours = {key: count for key, count in audit.items() if key[0] in (RUNNING, OTHER)}
    assert ours == {(RUNNING, "success"): len(DATES), (OTHER, "success"): len(OTHER_DATES)}, audit


def test_a_stream_rides_through_its_metastore_away(
    project: Any, postgres: Any, tmp_path: Path
) -> None:
    """``hashcdc stream`` in a process of its own on the shared metastore: the metastore's
    database server stopped for 45 s while events land; the stream says it retries, and
    applies them once the server is back, each once, its audit row counting the retries."""
    from feed_events import create, feed_config, json_lines

    columns = [{"name": "id", "type": "int", "key": True}, {"name": "name", "type": "string"}]
    project.add_table({**feed_config("ms_feed", columns), "retry_for": "5m"})
    day = DATES[0]

    def deliver(name: str, events: list[Any]) -> None:
        project.write_text(f"landing/ms_feed/{day}/{name}.json", json_lines(events))

    deliver("a", [create(1, id=1, name="ann"), create(2, id=2, name="ben")])
    env = hashcdc_environment(
        f"file://{tmp_path}/warehouse", "shared", HASHCDC_ENGINE="off", **postgres.environment()
    )
    stream = hashcdc(project.root, env, "stream", "--interval", "0.5")
    output = Lines(stream)
    # Hive logs each failed metastore call with its stack: read, or the pipe fills and the
    # process blocks on its next line.
    errors: list[str] = []
    threading.Thread(target=lambda: errors.extend(stream.stderr), daemon=True).start()
    try:
        wait_until(lambda: "applied: I 2" in output.text(), 300, "the first batch")
        postgres.stop()
        try:
            deliver("b", [create(3, id=3, name="cy")])
            wait_until(lambda: "retrying with backoff" in output.text(), 120, "a retry")
            time.sleep(30)
        finally:
            postgres.start()
        try:
            wait_until(lambda: "applied: I 1" in output.text(), 300, "the batch after the outage")
        except TimeoutError:
            raise AssertionError(output.text() + "".join(errors)[-5000:]) from None
    finally:
        stream.terminate()
        status = stream.wait(120)
    text = output.text()
    assert status == 0 and "Traceback" not in text, text + "".join(errors)[-3000:]
    current = hashcdc(
        project.root, env, "query", "select id, name from ms_feed_current order by id"
    )
    status, out, err = finish(current, 300)
    assert status == 0 and out.split() == ["id,name", "1,ann", "2,ben", "3,cy"], out + err
