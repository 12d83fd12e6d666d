"""``hashcdc bench --engine``: the commands' fixed cost, as a user meets it, with the engine.

In a scratch project of its own (its warehouse, metastore and engines' folder) it makes a
1,000-row full extract, a delta and a change feed over four dates, then times whole
commands, start to exit, as processes of the ``hashcdc`` script: the first date with a
cold engine start, the later dates with the engine warm, ``status`` and a small ``query``
warm, and the same date in a process of its own (``--no-engine``: the cost before the
engine). Then one date of the three tables with ``--profile``: the Spark jobs of each
table-date, from Spark's event log. Whole commands only: a figure is what a user waits.
Beside them, the floor of a table-date on Spark and Delta without dbt
(:mod:`hashcdc.bench.floor`): what the date's targets are measured against.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hashcdc.bench import floor
from hashcdc.runtime.scaffold import scratch_project

DATES = ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05")
TABLES = {"bench_full": "full", "bench_delta": "delta", "bench_feed": "changes"}
REPEATS = 5
PROFILE_ROW = re.compile(r"^\| (\S+) \| [\d.]+ \| (\d+) \| \d+ \| [\d.]+ \|$")
PROFILE_TOTAL = re.compile(r"; (\d+) Spark jobs, (\d+) of them outside any node")


class Commands:
    """``hashcdc`` processes in the scratch project, each timed from start to exit."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.program = str(Path(sys.executable).parent / "hashcdc")

    def timed(self, *args: str, check: bool = True) -> tuple[float, str]:
        """Run ``hashcdc <args>``: seconds from start to exit and its standard output.

        Raises when it fails, unless ``check`` is false.
        """
        started = time.perf_counter()
        done = subprocess.run(  # noqa: S603 - our own command
            [self.program, "--project-dir", str(self.root), *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        if check and done.returncode != 0:
            raise RuntimeError(f"bench: hashcdc {' '.join(args)} failed:\n{done.stderr[-3000:]}")
        return round(seconds, 2), done.stdout


def _median(commands: Commands, *args: str) -> float:
    return round(statistics.median(commands.timed(*args)[0] for _ in range(REPEATS)), 2)


def jobs_per_table(profile: str) -> dict[str, int]:
    """Spark jobs of each table's nodes in a ``run --profile`` report, its share of the rest.

    A node belongs to the table whose name it contains (models, stage, tests); the jobs
    of nodes of no table (the audit hook) are shared out evenly.
    """
    per_table = dict.fromkeys(TABLES, 0)
    shared = 0
    for line in profile.splitlines():
        row = PROFILE_ROW.match(line)
        if not row:
            continue
        owner = next((t for t in TABLES if t in row.group(1)), None)
        if owner is None:
            shared += int(row.group(2))
        else:
            per_table[owner] += int(row.group(2))
    total = PROFILE_TOTAL.search(profile)
    if total:
        shared += int(total.group(2))
    return {table: jobs + round(shared / len(TABLES)) for table, jobs in per_table.items()}


def _floor(root: Path, env: dict[str, str], output: Path) -> dict[str, Any]:
    """The floor of a table-date on Spark and Delta (:mod:`hashcdc.bench.floor`).

    In a process of its own, with the scratch project's profile.
    """
    result = output / "bench_floor.json"
    subprocess.run(  # noqa: S603 - our own module
        [sys.executable, "-m", "hashcdc.bench.floor", str(root), str(result)],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    return json.loads(result.read_text())


def scratch_commands(project_dir: Path, output: Path, name: str) -> Commands:
    """``hashcdc`` commands in a new scratch project ``<output>/<name>`` with its engine.

    Its own warehouse, metastore and engines' folder; commands go through the engine
    (``HASHCDC_ENGINE=on``), and no event log is kept.
    """
    root = output / name
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    engines = output / "engines"
    engines.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {**os.environ, **scratch_project(project_dir, root)}
    env |= {"HASHCDC_ENGINE": "on", "HASHCDC_ENGINE_DIR": str(engines)}
    env.pop("HASHCDC_EVENT_LOG", None)
    return Commands(root, env)


def run(project_dir: Path, output: Path) -> dict[str, Any]:
    """Measure, print and return the figures (also ``<output>/bench_engine.json``)."""
    commands = scratch_commands(project_dir, output, "engine_work")
    root, env = commands.root, commands.env
    figures: dict[str, Any] = {}
    try:
        for table, extract_type in TABLES.items():
            commands.timed(
                "datagen", "--table", table, "--initial-records", "1000",
                "--extract-type", extract_type, "--dates", *DATES,
            )  # fmt: skip
        commands.timed("generate")
        commands.timed("engine", "stop")
        figures["cold_engine_first_date_s"], _ = commands.timed(
            "run", "--date", DATES[0], "--select", "bench_full"
        )
        figures["warm_date_s"] = [
            commands.timed("run", "--date", d, "--select", "bench_full")[0] for d in DATES[1:3]
        ]
        figures["warm_status_s"] = _median(commands, "status")
        figures["warm_query_s"] = _median(
            commands, "query", "select count(*) from bench_full_current"
        )
        commands.timed("run", "--date", *DATES[:3], "--select", "bench_delta", "bench_feed")
        _, out = commands.timed("run", "--date", DATES[3], "--profile")
        figures["jobs_per_table_date"] = jobs_per_table(out)
        commands.timed("engine", "stop")
        figures["no_engine_date_s"], _ = commands.timed(
            "--no-engine", "run", "--date", DATES[4], "--select", "bench_full"
        )
        figures["floor"] = _floor(root, env, output)
    finally:
        commands.timed("engine", "stop", check=False)
    (output / "bench_engine.json").write_text(json.dumps(figures, indent=2) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    return figures


def markdown(figures: dict[str, Any]) -> str:
    """The figures as a table, beside the targets of issue 44."""
    jobs = figures.get("jobs_per_table_date", {})
    rows = [
        ("1,000-row date, cold engine start (command start to exit)",
         f"{figures['cold_engine_first_date_s']} s", "≤ 12 s"),
        ("1,000-row date, warm engine",
         " / ".join(f"{s} s" for s in figures["warm_date_s"]), "≤ 2 s"),
        ("1,000-row date, a process of its own (`--no-engine`)",
         f"{figures['no_engine_date_s']} s", "—"),
        (f"`hashcdc status`, warm (median of {REPEATS})", f"{figures['warm_status_s']} s", "≤ 1 s"),
        (f"`hashcdc query` count, warm (median of {REPEATS})",
         f"{figures['warm_query_s']} s", "≤ 1 s"),
        *[(f"Spark jobs of a table-date: {t} ({TABLES[t]})", str(n), "≤ 15")
          for t, n in jobs.items()],
        *[(f"the floor, no dbt ({form} form): a date's seconds, Spark jobs (median of dates "
           f"{floor.WARM_FROM}–{floor.DATES})",
           f"{f['date_s_median']} s, {f['jobs_median']} jobs", "—")
          for form, f in figures.get("floor", {}).items()],
    ]  # fmt: skip
    lines = ["| what | measured | target |", "| --- | ---: | ---: |"]
    lines += [f"| {what} | {value} | {target} |" for what, value, target in rows]
    return "\n".join(lines) + "\n"
