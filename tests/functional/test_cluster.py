"""The same project on a Spark standalone cluster: same results as the embedded Spark.

A master and two workers start on 127.0.0.1 from the pyspark distribution; ``hashcdc
run`` is the driver with the ``cluster`` target, its executors run in the workers, the
metastore is the private PostgreSQL server, and the warehouse and landing zone are
``file:`` URIs outside the project folder. The cluster stops when the module's tests end,
also when one fails.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import (
    SparkStandalone,
    finish,
    generate_tables,
    hashcdc,
    hashcdc_environment,
    parse_snapshot,
    snapshot_sql,
    spark_standalone,
    stop_group,
)

# Two dates: the second diffs against a state the cluster wrote (a third adds time, not cases).
DATES = ["2023-07-01", "2023-07-02"]
# A snapshot table and a change feed: the two state macros and the two kinds of stage. A
# delta table runs the snapshot's models with other SQL only (the local tests cover it).
TABLES = {"cl_full": "full", "cl_feed": "changes"}
EXECUTOR_REPORT = re.compile(r"hashcdc: (\d+) of (\d+) executor\(s\) ran tasks on spark://")


@pytest.fixture(scope="module")
def cluster(postgres: Any) -> Iterator[SparkStandalone]:
    """A master and two workers of one core and 1 GiB each."""
    del postgres  # started first: the cluster's runs need the metastore
    with spark_standalone(workers=2, cores=1, memory="1g") as running:
        yield running


def _environment(tmp_path: Path, cluster: SparkStandalone, postgres: Any, **extra: str) -> dict:
    settings = {
        "HASHCDC_SPARK_MASTER": cluster.master_url,
        "HASHCDC_EXECUTOR_MEMORY": "1g",
        "HASHCDC_EXECUTOR_CORES": "1",
        "HASHCDC_UI_PORT": "0",
    }
    return hashcdc_environment(
        f"file://{tmp_path}/warehouse",
        "cluster",
        **settings | postgres.environment() | extra,
    )


def test_a_cluster_run_equals_the_local_run(
    project: Any, postgres: Any, cluster: SparkStandalone, tmp_path: Path
) -> None:
    landing = f"file://{tmp_path}/landing"
    generate_tables(project.spark, project.root, landing, TABLES, DATES, records=400)
    relations = [f"{t}_{kind}" for t in TABLES for kind in ("current", "history", "rejects")]
    for business_date in DATES:
        outcome = project.build(business_date, *TABLES)
        assert outcome.success, outcome.text
    rows = project.spark.sql(snapshot_sql(relations)).collect()
    local = sorted((row.relation, row.row) for row in rows)

    env = _environment(tmp_path, cluster, postgres)
    started = time.monotonic()
    status, out, err = finish(hashcdc(project.root, env, "run", "--date", *DATES), 900)
    seconds = time.monotonic() - started
    assert status == 0, out[-3000:] + err[-3000:]
    report = EXECUTOR_REPORT.search(out)
    assert report, out[-2000:]
    working, registered = int(report.group(1)), int(report.group(2))
    print(f"cluster run of {len(DATES)} dates: {seconds:.0f} s; {report.group(0)}")
    # Both workers host an executor and both did work: the tasks ran in the cluster.
    assert (working, registered) == (2, 2), report.group(0)

    status, out, err = finish(hashcdc(project.root, env, "query", snapshot_sql(relations)), 300)
    assert status == 0, err[-3000:]
    assert parse_snapshot(out) == local
    assert {relation for relation, _ in local} >= {f"{t}_history" for t in TABLES}


def test_no_executor_is_reported_within_a_minute(
    project: Any, postgres: Any, cluster: SparkStandalone, tmp_path: Path
) -> None:
    env = _environment(tmp_path, cluster, postgres, HASHCDC_EXECUTOR_MEMORY="64g")
    started = time.monotonic()
    query = hashcdc(project.root, env, "query", "select count(*) from range(10)")
    warnings: list[tuple[float, str]] = []

    def read() -> None:
        for line in query.stderr:
            if "no Spark executor" in line:
                warnings.append((time.monotonic() - started, line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = started + 90
        while not warnings and time.monotonic() < deadline and query.poll() is None:
            time.sleep(1)
    finally:
        stop_group(query)
    assert warnings, "no warning about the missing executors"
    seconds, line = warnings[0]
    # From the command's start, the driver's start-up included.
    assert seconds < 60, seconds
    assert "spark.executor.memory=64g (HASHCDC_EXECUTOR_MEMORY)" in line
    assert "HASHCDC_EXECUTOR_CORES" in line
