"""``hashcdc bench``: day 2 of the article's shape against the copy floor, one session.

For each size it builds a scratch project (its own warehouse and metastore under the
output folder), generates the article's shape (5 uuid keys, 10 random doubles; day 2:
20% deleted and replaced, 40% updated, 40% unchanged), runs day 1 and day 2 through the
real pipeline (dbt in-process, the same SparkSession), and measures in the same session
the **copy floor**: reading the same day-2 CSV and writing it once as parquet. Start-up
(JVM, metastore) and dbt's own overhead (parse) are reported apart from the CDC work.

Results go to ``<output>/bench.json`` and a markdown table (``--report``, e.g.
``docs/benchmarks.md``). Benchmarks are never part of the test suite's assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATES = ("2019-06-18", "2019-06-19")
DELTA_FRACTION_CHANGED = 0.01


def _scratch_project(project_dir: Path, work: Path) -> Path:
    """A copy of the project skeleton with its own warehouse and metastore."""
    from hashcdc.project import scratch_project

    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    os.environ.update(scratch_project(project_dir, work))
    return work


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def _peak_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _machine(spark: Any) -> dict[str, Any]:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    memory_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory_kib = int(line.split()[1])
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(memory_kib / 1024 / 1024, 1),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "spark": spark.version,
        "java": java.splitlines()[0] if java else "unknown",
        "driver_memory": spark.conf.get("spark.driver.memory", "default"),
        "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
    }


def _build(
    work: Path, business_date: str, table: str, command: str = "run", per_model: dict | None = None
) -> float:
    """Run one dbt command for a date; per-model seconds go into ``per_model``."""
    from hashcdc.project import business_date_vars, dbt_args, invoke_dbt, table_selector

    extra = ["--vars", business_date_vars(business_date)]
    if command != "parse":
        extra += table_selector([table])
    seconds, result = _timed(lambda: invoke_dbt(dbt_args(command, work, extra)))
    if not result.success:
        raise RuntimeError(f"bench: dbt {command} for {business_date} failed")
    if per_model is not None:
        for node_result in getattr(result.result, "results", None) or []:
            name = node_result.node.name.replace(table, "<table>")
            per_model.setdefault(name, []).append(round(node_result.execution_time, 2))
    return seconds


def _copy_floor(spark: Any, columns: list[dict[str, Any]], source: Path, target: Path) -> float:
    """Read the CSV with its typed schema (the table config's columns), write it as parquet."""
    schema = ", ".join(f"{c['name']} {c['type']}" for c in columns)

    def copy() -> None:
        frame = spark.read.schema(schema).option("header", True).csv(str(source))
        frame.write.mode("overwrite").parquet(str(target))

    return _timed(copy)[0]


def _stage_compute(spark: Any, work: Path, table: str, business_date: str) -> float:
    """The hash stage alone: read, cast and hash the extract, with no write (noop sink)."""
    from hashcdc.config import load_table_configs
    from hashcdc.stage import typecast_and_hash

    config = next(t for t in load_table_configs(work / "tables") if t.name == table)
    frame = typecast_and_hash(spark, config.to_dict(), business_date)
    return _timed(lambda: frame.write.format("noop").mode("overwrite").save())[0]


def _small_change_day2(spark: Any, work: Path, rows: int, extract_type: str) -> dict[str, Any]:
    """Day 2 of a delta extract or a change feed in which 1% of the keys changed.

    Day 1 loads every row (a full extract; a feed of snapshot reads), so day 2 runs against
    the full state. Figures are named after the extract type (``delta_…``, ``changes_…``).
    """
    from hashcdc import datagen, generate
    from hashcdc.config import load_table_configs

    table = f"bench_{rows}_{extract_type}"
    options = datagen.DatagenOptions(
        table_name=table,
        initial_records=rows,
        dates=DATES,
        extract_type=extract_type,
        fraction_deleted=0.0,
        fraction_updated=DELTA_FRACTION_CHANGED,
        fraction_unchanged=1 - DELTA_FRACTION_CHANGED,
    )
    datagen.generate_extracts(spark, options, work)
    generate.write(work, load_table_configs(work / "tables"))
    day1 = _build(work, DATES[0], table)
    per_model: dict[str, list[float]] = {}
    day2 = _build(work, DATES[1], table, per_model=per_model)
    return {
        f"{extract_type}_day1_run_s": round(day1, 2),
        f"{extract_type}_day2_run_s": round(day2, 2),
        f"{extract_type}_day2_per_model_s": {name: v[0] for name, v in per_model.items()},
    }


def bench_size(
    spark: Any, work: Path, rows: int, repeat: int, delta: bool = True
) -> dict[str, Any]:
    """Measure one size; returns the figures (seconds; medians of ``repeat`` runs)."""
    from hashcdc import datagen, generate
    from hashcdc.config import load_table_configs

    table = f"bench_{rows}"
    options = datagen.DatagenOptions(table_name=table, initial_records=rows, dates=DATES)
    datagen_seconds, _ = _timed(lambda: datagen.generate_extracts(spark, options, work))
    generate.write(work, load_table_configs(work / "tables"))
    parse_seconds = _timed(lambda: _build(work, DATES[0], table, command="parse"))[0]
    day1 = _build(work, DATES[0], table)
    day2_runs, floor_runs, test_runs = [], [], []
    per_model: dict[str, list[float]] = {}
    day2_csv = work / "landing" / table / DATES[1]
    for _ in range(repeat):
        day2_runs.append(_build(work, DATES[1], table, per_model=per_model))
        test_runs.append(_build(work, DATES[1], table, command="test"))
        floor_runs.append(
            _copy_floor(
                spark,
                datagen.table_config(options)["columns"],
                day2_csv,
                work / "copy_floor" / table,
            )
        )
    day2, floor = statistics.median(day2_runs), statistics.median(floor_runs)
    csv_bytes = sum(p.stat().st_size for p in day2_csv.glob("*.csv"))
    stage_compute = _stage_compute(spark, work, table, DATES[1])
    delta_figures: dict[str, Any] = {}
    for extract_type in ("delta", "changes") if delta else ():
        delta_figures.update(_small_change_day2(spark, work, rows, extract_type))
        delta_figures[f"{extract_type}_over_full_day2"] = round(
            delta_figures[f"{extract_type}_day2_run_s"] / day2, 2
        )
    return {
        "rows": rows,
        "csv_mib": round(csv_bytes / 2**20, 1),
        "datagen_s": round(datagen_seconds, 2),
        "dbt_parse_s": round(parse_seconds, 2),
        "day1_run_s": round(day1, 2),
        "day2_run_s": round(day2, 2),
        "day2_run_all_s": [round(s, 2) for s in day2_runs],
        "day2_tests_s": round(statistics.median(test_runs), 2),
        "copy_floor_s": round(floor, 2),
        "copy_floor_all_s": [round(s, 2) for s in floor_runs],
        "day2_over_floor": round(day2 / floor, 2),
        "day2_per_model_s": {name: statistics.median(v) for name, v in per_model.items()},
        "day2_dbt_overhead_s": round(
            day2 - sum(statistics.median(v) for v in per_model.values()), 2
        ),
        "stage_compute_s": round(stage_compute, 2),
        **delta_figures,
    }


def _markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        "# Benchmarks",
        "",
        "Produced by `hashcdc bench` (not part of the tests). Times in seconds; medians of "
        f"{report['repeat']} run(s). Day 2 is `dbt run` of the table's models (stage, "
        "state, current, history) for the second date, dbt parse included; the copy floor "
        "reads the same day-2 CSV and writes it once as parquet, in the same session.",
        "",
        f"Machine: {machine['cores']} cores, {machine['memory_gib']} GiB, {machine['cpu']}; "
        f"Spark {machine['spark']}, {machine['java']}, Python {machine['python']}; "
        f"driver memory {machine['driver_memory']}, shuffle partitions "
        f"{machine['shuffle_partitions']}.",
        "",
        f"Session start-up (JVM + metastore): {report['startup_s']} s. "
        f"Peak resident memory: JVM {report['peak_rss_mib'].get('jvm')} MiB, "
        f"Python {report['peak_rss_mib'].get('python')} MiB.",
        "",
        "| rows | CSV MiB | dbt parse | day 1 | day 2 | day-2 tests | copy floor | day 2 / floor |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in report["sizes"]:
        lines.append(
            f"| {size['rows']:,} | {size['csv_mib']} | {size['dbt_parse_s']} | "
            f"{size['day1_run_s']} | {size['day2_run_s']} | {size['day2_tests_s']} | "
            f"{size['copy_floor_s']} | {size['day2_over_floor']} |"
        )
    lines += [
        "",
        "Day 2 per model (seconds, as dbt reports them; the rest of the day-2 time is dbt's "
        "own work: parse, metadata queries):",
        "",
        "| rows | " + " | ".join(report["sizes"][0]["day2_per_model_s"]) + " | dbt overhead |",
        "| ---: |" + " ---: |" * (len(report["sizes"][0]["day2_per_model_s"]) + 1),
    ]
    for size in report["sizes"]:
        per_model = " | ".join(str(v) for v in size["day2_per_model_s"].values())
        lines.append(f"| {size['rows']:,} | {per_model} | {size['day2_dbt_overhead_s']} |")
    lines += [
        "",
        "The hash stage alone (read the day-2 CSV, cast, hash; a `noop` sink, no write) and "
        f"day 2 of a delta extract and of a Debezium change feed in which "
        f"{DELTA_FRACTION_CHANGED:.0%} of the keys changed, against the full state of day 1 "
        "(`dbt run`, parse included):",
        "",
        "| rows | hash stage alone | stage alone / floor | delta day 2 | delta / full day 2 "
        "| feed day 2 | feed / full day 2 |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in report["sizes"]:
        stage_ratio = round(size["stage_compute_s"] / size["copy_floor_s"], 2)
        lines.append(
            f"| {size['rows']:,} | {size['stage_compute_s']} | {stage_ratio} | "
            f"{size.get('delta_day2_run_s', '—')} | {size.get('delta_over_full_day2', '—')} | "
            f"{size.get('changes_day2_run_s', '—')} | {size.get('changes_over_full_day2', '—')} |"
        )
    return "\n".join(lines) + "\n"


def main(project_dir: Path, args: argparse.Namespace) -> int:
    """Run the benchmark for every requested size and write the reports."""
    output = args.output if args.output.is_absolute() else project_dir / args.output
    work = _scratch_project(project_dir, output / "work")
    os.chdir(work)
    from hashcdc.project import spark_session

    startup, spark = _timed(lambda: spark_session(work))
    sizes = [bench_size(spark, work, rows, args.repeat, not args.no_delta) for rows in args.rows]
    jvm_pid = spark.sparkContext._gateway.proc.pid  # noqa: SLF001 - the JVM's pid
    report = {
        "machine": _machine(spark),
        "repeat": args.repeat,
        "startup_s": round(startup, 2),
        "peak_rss_mib": {
            "jvm": _peak_rss_mib(jvm_pid),
            "python": _peak_rss_mib(os.getpid()),
        },
        "sizes": sizes,
    }
    output.mkdir(parents=True, exist_ok=True)
    (output / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = _markdown(report)
    (output / "bench.md").write_text(markdown)
    if args.report:
        report_path = args.report if args.report.is_absolute() else project_dir / args.report
        report_path.write_text(markdown)
    print(markdown)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0
