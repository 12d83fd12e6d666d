"""Crash safety: SIGKILL real ``hashcdc run`` and ``hashcdc compact`` processes, then rerun.

The runs are separate processes (their own JVM, warehouse and Derby metastore in a
scratch project), killed while the stage hashes, while the state is written and while the
history is written. After each kill the state (a Delta table) holds the previous date or
the new one whole, never a mix; after the final re-run, current and history must equal
the pure-Python oracle, i.e. a clean run. Then ``hashcdc compact`` is killed at two
instants of its work: the state's rows stay those of the clean run, the next compaction
finishes, and time travel still reads the first date. The kills are timed from the
commands' own progress lines; each test checks that the process really died before the
step it targeted finished, so it cannot pass vacuously.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from oracle import apply_extract

from hashcdc.state.versions import applied_from_history

REPO = Path(__file__).resolve().parents[2]
TABLE = "crashy"
DATES = ("2024-05-01", "2024-05-02")
ROWS = 300_000
COLUMNS = ["id", "name", "city", "score"]


def extract(day: int) -> list[dict[str, Any]]:
    """Day 1: ROWS rows. Day 2: a fifth deleted, a fifth updated, ROWS // 5 new keys."""
    rows = []
    for i in range(ROWS + (ROWS // 5 if day == 2 else 0)):
        if day == 2 and i % 5 == 0:
            continue
        version = 2 if day == 2 and i % 5 == 1 else 1
        rows.append(
            {"id": i, "name": f"name {i} v{version}", "city": f"city {i % 97}", "score": i % 1000}
        )
    return rows


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [",".join(COLUMNS)]
    lines += [f'{r["id"]},"{r["name"]}","{r["city"]}",{r["score"]}' for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def crash_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    import yaml

    from hashcdc.codegen import generate
    from hashcdc.config import load_table_configs
    from hashcdc.runtime.scaffold import scratch_project

    root = tmp_path_factory.mktemp("crash_project")
    env = {**os.environ, **scratch_project(REPO, root)}
    env.update(
        HASHCDC_LOCAL_MASTER="local[2]",
        HASHCDC_SHUFFLE_PARTITIONS="2",
        HASHCDC_DRIVER_MEMORY="1g",
        PYTHONUNBUFFERED="1",
    )
    config = {
        "name": TABLE,
        "extract_type": "full",
        "source": {"path": f"landing/{TABLE}/{{business_date}}.csv"},
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "name", "type": "string"},
            {"name": "city", "type": "string"},
            {"name": "score", "type": "int"},
        ],
    }
    (root / "tables" / f"{TABLE}.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    generate.write(root, load_table_configs(root / "tables"))
    for day, business_date in enumerate(DATES, start=1):
        write_csv(root / "landing" / TABLE / f"{business_date}.csv", extract(day))
    return root, env


def hashcdc(root: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hashcdc.cli", "--project-dir", str(root), *args],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def hashcdc_run(root: Path, env: dict[str, str], business_date: str) -> subprocess.Popen:
    return hashcdc(root, env, "run", "--date", business_date)


def kill_after(process: subprocess.Popen, marker: str, delay: float) -> list[str]:
    """SIGKILL a command (and its JVM) ``delay`` s after it prints a line that contains
    ``marker``; returns its output."""
    lines: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if marker in line:
            time.sleep(delay)
            os.killpg(process.pid, signal.SIGKILL)
            break
    process.wait(timeout=120)
    lines += process.stdout.readlines()
    return lines


def read_history(spark: Any, root: Path, business_date: str) -> list[tuple]:
    """A date's history rows straight from the Delta files (no metastore needed)."""
    path = root / "warehouse" / "hashcdc.db" / f"{TABLE}_history"
    frame = spark.read.format("delta").load(str(path))
    frame = frame.where(f"business_date = date'{business_date}'")
    return sorted(
        tuple(row) for row in frame.select("id", "name", "city", "score", "operation").collect()
    )


def state_path(root: Path) -> Path:
    return root / "warehouse" / "hashcdc.db" / f"{TABLE}_state"


def read_current(spark: Any, root: Path, version: int | None = None) -> list[tuple]:
    """The state straight from its Delta files (the latest version, or ``version``), as
    the current view shows it (the operation of the state's date, else N)."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    reader.load(str(state_path(root))).createOrReplaceTempView("crashy_state_files")
    frame = spark.sql(
        "select id, name, city, score, if(business_date = (select max(business_date) "
        "from crashy_state_files where operation = 'W'), operation, 'N') as operation "
        "from crashy_state_files where operation in ('I', 'U', 'N', 'X')"
    )
    return sorted(tuple(row) for row in frame.collect())


def test_killed_runs_leave_the_previous_state_intact_and_a_rerun_equals_a_clean_run(
    spark: Any, crash_project: tuple[Path, dict[str, str]]
) -> None:
    root, env = crash_project
    first = hashcdc_run(root, env, DATES[0])
    output, _ = first.communicate(timeout=600)
    assert first.returncode == 0, output
    day_1_state = read_current(spark, root)
    assert len(day_1_state) == ROWS

    keys, compared = ["id"], ["name", "city", "score"]
    state, _ = apply_extract({}, extract(1), DATES[0], keys, compared, "full")
    expected_state, expected_history = apply_extract(
        state, extract(2), DATES[1], keys, compared, "full"
    )
    expected_current = sorted(
        (v.row["id"], v.row["name"], v.row["city"], v.row["score"], v.operation)
        for v in expected_state.values()
    )
    expected_changes = sorted(
        (v.row["id"], v.row["name"], v.row["city"], v.row["score"], v.operation)
        for v in expected_history
    )

    crash_points = [(f"stg_{TABLE}", 4.0), (f"{TABLE}_state", 2.0), (f"{TABLE}_history", 0.5)]
    for model, delay in crash_points:
        lines = kill_after(hashcdc_run(root, env, DATES[1]), f" model hashcdc.{model} ", delay)
        text = "".join(lines)
        started = [line for line in lines if "START" in line and f"hashcdc.{model} " in line]
        assert started, f"{model} never started: the crash point was missed\n{text}"
        assert not any("OK created" in line and f"hashcdc.{model} " in line for line in lines), (
            f"the run finished {model} before the kill: the crash point was missed\n{text}"
        )
        # A commit is atomic: the state holds one date whole (the history's kill comes
        # after the state's commit), and the history (Delta) the date's rows or none.
        assert read_current(spark, root) in (day_1_state, expected_current), model
        assert read_history(spark, root, DATES[1]) in ([], expected_changes), model

    rerun = hashcdc_run(root, env, DATES[1])
    output, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, output

    assert read_current(spark, root) == expected_current
    assert read_history(spark, root, DATES[1]) == expected_changes

    # Compaction: OPTIMIZE is one commit that changes no row, so a kill leaves the rows.
    for delay in (0.3, 2.0):
        marker = f"{TABLE}_state: compacting"
        lines = kill_after(hashcdc(root, env, "compact"), marker, delay)
        assert any(marker in line for line in lines), "".join(lines)
        assert not any("compacted into" in line for line in lines), "".join(lines)
        assert read_current(spark, root) == expected_current, f"compaction killed at {delay} s"
    compaction = hashcdc(root, env, "compact")
    output, _ = compaction.communicate(timeout=600)
    assert compaction.returncode == 0 and "compacted into" in output, output
    assert read_current(spark, root) == expected_current
    history = spark.sql(f"describe history delta.`{state_path(root)}`").collect()
    assert "OPTIMIZE" in [row["operation"] for row in history]
    [day_1, _] = applied_from_history([row.asDict() for row in history])
    assert read_current(spark, root, day_1.last_version) == day_1_state
