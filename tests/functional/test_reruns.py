"""Run order and concurrency: replay, locks, and a state from another hash version."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

from hashcdc.cli import main
from hashcdc.runtime.lock import LOCK_FOLDER, _process_start

COLUMNS = [{"name": "id", "type": "int", "key": True}, {"name": "v", "type": "string"}]
HEADER = "id,v\n"


def add_table(project: Any, name: str) -> None:
    project.add_table(
        {
            "name": name,
            "extract_type": "full",
            "source": {"path": f"landing/{name}/{{business_date}}.csv"},
            "columns": COLUMNS,
        }
    )


def cli(project: Any, *args: str) -> int:
    return main(["--project-dir", str(project.root), *args])


def changes(project: Any, name: str, business_date: str) -> list[tuple]:
    rows = project.rows(
        f"select id, v, operation from {name}_history where business_date = date'{business_date}'"
    )
    return sorted((r["id"], r["v"], r["operation"]) for r in rows)


def test_replay_recomputes_a_date_and_every_later_one_in_order(project: Any, capsys: Any) -> None:
    name = "replayed"
    add_table(project, name)
    extracts = {
        "2024-02-01": "1,a\n2,b\n",
        "2024-02-02": "1,a\n2,B\n",
        "2024-02-03": "1,a2\n2,B\n3,c\n",
    }
    for business_date, rows in extracts.items():
        project.write_text(f"landing/{name}/{business_date}.csv", HEADER + rows)
        assert cli(project, "run", "--date", business_date, "--select", name) == 0

    # The extract of 2024-02-02 was wrong: deliver the corrected one and replay from there.
    project.write_text(f"landing/{name}/2024-02-02.csv", HEADER + "1,a\n2,b\n4,d\n")
    assert cli(project, "replay", "--from", "2024-02-02", "--select", name) == 0

    assert changes(project, name, "2024-02-01") == [(1, "a", "I"), (2, "b", "I")]
    assert changes(project, name, "2024-02-02") == [(4, "d", "I")]
    assert changes(project, name, "2024-02-03") == [
        (1, "a2", "U"),
        (2, "B", "U"),
        (3, "c", "I"),
        (4, "d", "D"),
    ]
    current = project.rows(f"select id, v, operation, eff_start_date from {name}_current")
    assert sorted((r["id"], r["v"], r["operation"], str(r["eff_start_date"])) for r in current) == [
        (1, "a2", "U", "2024-02-03"),
        (2, "B", "U", "2024-02-03"),
        (3, "c", "I", "2024-02-03"),
    ]
    # A plain run of an older date is still refused, and points at replay.
    outcome = project.build("2024-02-02", name)
    assert not outcome.success
    assert "hashcdc replay --from 2024-02-02" in outcome.text

    # --as-of reads the state after the date however the table is named.
    schema = project.schema
    capsys.readouterr()
    for spelled in (f"{name}_current", f"{schema}.{name}_current", f"`{schema}`.`{name}_current`",
                    f"spark_catalog.{schema}.{name}_current"):  # fmt: skip
        sql = f"select id, v from {spelled} where id in (select id from {spelled}) order by id"
        assert cli(project, "query", "--as-of", "2024-02-02", sql) == 0
        assert capsys.readouterr().out.splitlines() == ["id,v", "1,a", "2,b", "4,d"], spelled
    # A name --as-of cannot serve is refused in one line, not read at its latest version.
    assert cli(project, "query", "--as-of", "2024-02-02", "select * from other.t") == 2
    err = capsys.readouterr().err
    assert f"`other.t` is not a table of schema {schema}" in err and "Traceback" not in err, err
    # The session's names read the latest state again after an --as-of query, and a query
    # Spark cannot parse is one line too.
    assert cli(project, "query", f"select count(*) as n from {name}_current") == 0
    assert capsys.readouterr().out.splitlines() == ["n", "3"]
    assert cli(project, "query", "select from where") == 2
    err = capsys.readouterr().err
    assert err.startswith("hashcdc: query: ") and len(err.splitlines()) == 1, err


def test_a_locked_table_fails_fast_and_a_dead_runs_lock_is_cleared(
    project: Any, capsys: Any
) -> None:
    name = "locked"
    add_table(project, name)
    project.write_text(f"landing/{name}/2024-02-01.csv", HEADER + "1,a\n")
    warehouse = project.spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    lock = Path(warehouse) / LOCK_FOLDER / f"{name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(["sleep", "120"])
    try:
        lock.write_text(
            json.dumps(
                {
                    "host": socket.gethostname(),
                    "pid": holder.pid,
                    "process_start": _process_start(holder.pid),
                    "since": "2024-02-01T06:00:00+00:00",
                }
            )
        )
        assert cli(project, "run", "--date", "2024-02-01", "--select", name) == 2
        err = capsys.readouterr().err
        assert f"table '{name}' is being processed by another run (pid {holder.pid}" in err
        assert project.rows(f"show tables like '{name}_state'") == []
    finally:
        holder.kill()
        holder.wait()
    # The holder was killed without releasing the lock: the next run clears it and runs.
    assert cli(project, "run", "--date", "2024-02-01", "--select", name) == 0
    assert "cleared the lock of table 'locked' left by a run that ended" in capsys.readouterr().out
    assert not lock.exists()
    assert changes(project, name, "2024-02-01") == [(1, "a", "I")]


def test_a_state_of_another_hash_version_is_refused(project: Any) -> None:
    name = "rehashed"
    add_table(project, name)
    project.write_text(f"landing/{name}/2024-02-01.csv", HEADER + "1,a\n")
    assert project.build("2024-02-01", name).success
    project.spark.sql(f"alter table {name}_state set tblproperties ('hashcdc.hash_version'='1')")
    project.write_text(f"landing/{name}/2024-02-02.csv", HEADER + "1,a\n")
    outcome = project.build("2024-02-02", name)
    assert not outcome.success
    assert "holds hashes of hash algorithm version 1, but this hashcdc computes version 2" in (
        outcome.text
    )
    assert changes(project, name, "2024-02-02") == []


def test_readers_never_miss_the_views_a_date_makes_again(project: Any) -> None:
    """`current` and `scd2` are made again by every date: a reader meanwhile finds them.

    (Spark's `create or replace view` drops a view, then creates it: hashcdc alters it.)
    """
    name = "rr_views"
    add_table(project, name)
    project.write_text(f"landing/{name}/2024-01-01.csv", HEADER + "1,a\n2,b\n")
    project.write_text(f"landing/{name}/2024-01-02.csv", HEADER + "1,a\n2,c\n3,d\n")
    assert project.build("2024-01-01", name).success
    spark = project.spark
    failures: list[str] = []
    reads = [0]
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                spark.sql(f"select count(*) from {name}_current").collect()
                spark.sql(f"select count(*) from {name}_scd2").collect()
                reads[0] += 1
            except Exception as error:  # noqa: BLE001 - every failed read is the finding
                failures.append(str(error).splitlines()[0])

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(8):
            outcome = project.dbt("run", "--select", f"{name}_current", f"{name}_scd2")
            assert outcome.success, outcome.text
        outcome = project.build("2024-01-02", name)
        assert outcome.success, outcome.text
    finally:
        done.set()
        reader.join()
    assert reads[0] > 0
    assert failures == []
    rows = project.rows(f"select id, v from {name}_current")
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, "a"), (2, "c"), (3, "d")]
