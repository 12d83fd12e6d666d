"""``hashcdc bench``: four cases of a day against the copy floor and a peer, one session.

For each size it builds a scratch project (its own warehouse and metastore under the
output folder) and generates the article's shape (5 uuid keys, 10 random doubles) over
three dates: day 2 is the article's (20% deleted and replaced, 40% updated), day 3 a
typical day (a full extract in which 1% changed); then a delta and a change feed whose
day 2 changes 1% of the keys. Every date runs through the real pipeline (dbt in-process,
the same SparkSession), its tests timed apart. In the same session it measures the
**copy floor** (reading a day's CSV and writing it once as parquet), the hash stage
alone, dbt's parse and compile, and start-up (JVM, metastore); with ``--peer
dbt-duckdb`` each case also runs through :mod:`hashcdc.bench.peer`; up to
``--end-to-end-max-rows``, ``hashcdc run`` of day 2 is timed as a process of its own.

Results go to ``<output>/bench.json`` (after every step) and a markdown report
(``--report``, e.g. ``docs/benchmarks.md``; rendered by :mod:`hashcdc.bench.report`).
Benchmarks are never part of the test suite's assertions.

Over 400 lines: the cases share one scratch project, one Spark session and one figures
dictionary saved after every step; split, each part would pass all three around.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hashcdc.bench import report as bench_report
from hashcdc.bench.engine import scratch_commands
from hashcdc.bench.peer import PEERS, PeerCase, PeerFailedError, SparkPeer, meminfo_kib
from hashcdc.bench.report import FIXED_CHANGES, PEER_FIGURES
from hashcdc.codegen import datagen, generate
from hashcdc.config import load_table_configs
from hashcdc.pipeline.stage import typecast_and_hash
from hashcdc.relations import Relations
from hashcdc.runtime.project import (
    dbt_args,
    invoke_dbt,
    profile_output,
    session_with,
    spark_session,
    table_selector,
)
from hashcdc.runtime.scaffold import scratch_project
from hashcdc.state.maintenance import compact

DATES = ("2019-06-18", "2019-06-19", "2019-06-20")
# The article's day 2, then a typical day: a full extract in which 1% of the rows changed.
ARTICLE_FRACTIONS = (0.2, 0.4, 0.4)
TYPICAL_FRACTIONS = (0.002, 0.008, 0.99)
DELTA_FRACTION_CHANGED = 0.01


def _scratch_project(project_dir: Path, work: Path) -> Path:
    """A copy of the project skeleton with its own warehouse and metastore."""
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
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _machine(spark: Any) -> dict[str, Any]:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    memory_kib = meminfo_kib("MemTotal")
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
    work: Path,
    business_date: str,
    table: str,
    command: str = "run",
    per_model: dict | None = None,
    extra_args: Sequence[str] = (),
) -> float:
    """Run one dbt command for a date; per-model seconds go into ``per_model``."""
    extra = [*extra_args] + ([] if command == "parse" else table_selector([table]))
    if command == "compile":
        extra.append("--quiet")  # else dbt prints the compiled code
    # A parse is timed as dbt does it, with no date (a new date re-parses nothing: the date
    # is a var of the command run against this parse, project.invoke_dbt).
    dated = None if command == "parse" else business_date
    seconds, result = _timed(lambda: invoke_dbt(dbt_args(command, work, extra), dated))
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
    config = next(t for t in load_table_configs(work / "tables") if t.name == table)
    frame = typecast_and_hash(spark, config.to_dict(), business_date)
    return _timed(lambda: frame.write.format("noop").mode("overwrite").save())[0]


def _bytes_written(warehouse: Path, table: str, since: float) -> dict[str, int]:
    """Bytes of the files each of a table's models wrote since ``since`` (an epoch time).

    Every table's folder under the warehouse is walked; whatever the format (Delta's data
    files, deletion vectors and log, parquet partitions), a file written by the date
    counts once.
    """
    written: dict[str, int] = {}
    for folder in warehouse.glob(f"*.db/*{table}*"):
        model = folder.name.replace(table, "<table>")
        total = sum(
            path.stat().st_size
            for path in folder.rglob("*")
            if path.is_file() and path.stat().st_mtime >= since
        )
        if total:
            written[model] = total
    return written


def _run_days(
    work: Path,
    table: str,
    dates: Sequence[str],
    figures: dict[str, Any],
    prefix: str,
    with_tests: bool = True,
    extra_args: Sequence[str] = (),
) -> None:
    """Run each date of a table (``dbt run``, then its tests), recording every figure.

    ``<prefix>_day<N>_run_s``, ``…_tests_s``, ``…_per_model_s`` and ``…_bytes_written``
    (per model) for each date N.
    """
    from pyspark.sql import SparkSession

    warehouse = SparkSession.builder.getOrCreate().conf.get("spark.sql.warehouse.dir")
    for day, business_date in enumerate(dates, start=1):
        per_model: dict[str, list[float]] = {}
        started = time.time()
        figures[f"{prefix}day{day}_run_s"] = round(
            _build(work, business_date, table, per_model=per_model, extra_args=extra_args), 2
        )
        figures[f"{prefix}day{day}_bytes_written"] = _bytes_written(
            Path(urlparse(str(warehouse)).path), table, started
        )
        if with_tests:
            figures[f"{prefix}day{day}_tests_s"] = round(
                _build(work, business_date, table, command="test"), 2
            )
        figures[f"{prefix}day{day}_per_model_s"] = {k: v[0] for k, v in per_model.items()}


def _release(spark: Any, work: Path, table: str, args: argparse.Namespace) -> None:
    """Drop a measured case's tables and landed files (a 10M bench holds 70+ GB otherwise).

    Nothing with ``--keep``. The peers' own copies stay: one database file per peer.
    """
    if args.keep:
        return

    config = next(t for t in load_table_configs(work / "tables") if t.name == table)
    for name, is_view in generate.relations(config):
        spark.sql(f"drop {'view' if is_view else 'table'} if exists {name}")
    for folder in (work / "landing" / table, work / "copy_floor" / table):
        shutil.rmtree(folder, ignore_errors=True)


def _state_detail(spark: Any, table: str) -> Any:
    """Delta's ``describe detail`` of a table's state: its current version's bytes, files."""
    return spark.sql(f"describe detail {Relations(table).state}").first()


def _read_current(spark: Any, table: str) -> dict[str, float]:
    """Seconds to count ``current`` and to filter it on one key value."""
    current = spark.table(Relations(table).current)
    key = current.select("key_1").first()[0]
    count, _ = _timed(current.count)
    selective, _ = _timed(current.where(f"key_1 = '{key}'").collect)
    return {"count_s": round(count, 2), "filter_s": round(selective, 2)}


def _week_without_compaction(spark: Any, options: Any) -> dict[str, Any]:
    """Reading ``current`` after a week of uncompacted days, then after ``hashcdc compact``."""
    table = options.table_name
    figures: dict[str, Any] = {"week_days": len(options.dates) - 1}
    figures["week_state_files"] = _state_detail(spark, table)["numFiles"]
    _read_current(spark, table)  # warm: the first read also lists the log
    figures["week_read_uncompacted"] = _read_current(spark, table)
    # Every version kept: the bench measures compaction, not retention.
    compacting = _timed(lambda: compact(spark, Relations(table).state, len(options.dates)))
    figures["week_compact_s"] = round(compacting[0], 2)
    figures["week_read_compacted"] = _read_current(spark, table)
    return figures


def _small_change_options(rows: int, extract_type: str) -> Any:
    """A delta extract or a change feed whose day 2 changes 1% of the keys (updates).

    Day 1 loads every row (a full extract; a feed of snapshot reads), so day 2 runs against
    the full state.
    """
    return datagen.DatagenOptions(
        table_name=f"bench_{rows}_{extract_type}",
        initial_records=rows,
        dates=DATES[:2],
        extract_type=extract_type,
        fraction_deleted=0.0,
        fraction_updated=DELTA_FRACTION_CHANGED,
        fraction_unchanged=1 - DELTA_FRACTION_CHANGED,
    )


def _peer_case(work: Path, options: Any) -> Any:
    """The peer's view of a generated table."""
    return PeerCase(
        name=options.table_name,
        extract_type=options.extract_type,
        landing=work / options.output_folder,
        columns=datagen.table_config(options)["columns"],
    )


def _peer_days(spark: Any, peer: Any, options: Any, prefix: str) -> dict[str, Any]:
    """Every date of one table through a peer; its current rows checked against ours."""
    figures: dict[str, Any] = {}
    name = f"{peer.figure_prefix}_{prefix}"
    for day, business_date in enumerate(options.dates, start=1):
        try:
            steps = peer.run_date(options.table_name, business_date)
        except PeerFailedError as failure:
            # The peer's figures for this table stop here; the bench and the other peer go on.
            figures[f"{name}failed"] = f"day {day}: {failure}"
            figures[f"{peer.figure_prefix}_peak_rss_mib"] = peer.peak_rss_mib
            print(f"bench: {failure}", file=sys.stderr)
            return figures
        figures[f"{name}day{day}_load_s"] = steps["load_s"]
        figures[f"{name}day{day}_snapshot_s"] = steps["snapshot_s"]
        figures[f"{name}day{day}_s"] = steps["s"]
    current = peer.current_rows(options.table_name, spark)
    ours = spark.table(Relations(options.table_name).current).count()
    figures[f"{name}current_rows"] = current
    figures[f"{prefix}current_rows"] = ours
    if current != ours:
        print(
            f"bench: {peer.name}'s current {options.table_name} has {current:,} rows, "
            f"hashcdc's {ours:,}",
            file=sys.stderr,
        )
    figures[f"{peer.figure_prefix}_peak_rss_mib"] = peer.peak_rss_mib
    return figures


def _end_to_end(project_dir: Path, work: Path, table: str) -> dict[str, float]:
    """``hashcdc run`` of each date as a user runs it, each timed start to exit.

    Twice, each in a scratch project of its own (its own metastore: the bench's session
    holds its own) with the same table config, reading the bench's landing files: through
    the project's engine, as commands run by default (day 1 starts it, day 2 finds it
    warm), and with no engine (``--no-engine``: a process of its own, as before it).
    """
    seconds = {}
    for suffix, engine in (("", True), ("_no_engine", False)):
        commands = scratch_commands(project_dir, work.parent, f"end_to_end{suffix}")
        if not engine:
            commands.env["HASHCDC_ENGINE"] = "off"
        config = (work / "tables" / f"{table}.yml").read_text()
        tables = commands.root / "tables"
        (tables / f"{table}.yml").write_text(config.replace("landing/", f"{work}/landing/"))
        generate.write(commands.root, load_table_configs(tables))
        try:
            for day, business_date in enumerate(DATES, start=1):
                elapsed, _ = commands.timed("run", "--date", business_date)
                seconds[f"end_to_end_day{day}{suffix}_s"] = elapsed
        finally:
            if engine:
                commands.timed("engine", "stop", check=False)
        shutil.rmtree(commands.root, ignore_errors=True)
    return seconds


def _peers(args: argparse.Namespace, work: Path, cases: list[Any]) -> list[Any]:
    """The peers asked for with ``--peer``, each a scratch project under the output folder."""
    peers = []
    for name in args.peer or []:
        root = work / name
        if PEERS[name] is SparkPeer:
            peers.append(SparkPeer.on_project(root, cases, work))
        else:
            peers.append(PEERS[name](root, cases))
    return peers


def bench_size(
    spark: Any,
    work: Path,
    rows: int,
    args: argparse.Namespace,
    figures: dict[str, Any],
    save: Callable[[], None],
) -> None:
    """Measure one size into ``figures`` (seconds; one run each), saving after each step."""
    figures["rows"] = rows
    if args.only_change_cost:
        figures.update(_fixed_and_weekly_deltas(spark, work, rows, figures, args))
        save()
        return
    table = f"bench_{rows}"
    options = datagen.DatagenOptions(
        table_name=table,
        initial_records=rows,
        dates=DATES,
        fractions_by_date=(ARTICLE_FRACTIONS, TYPICAL_FRACTIONS),
    )
    small_changes = [] if args.no_delta else ["delta", "changes"]
    options_by_case = {
        "": options,
        **{f"{kind}_": _small_change_options(rows, kind) for kind in small_changes},
    }
    peers = _peers(args, work, [_peer_case(work, o) for o in options_by_case.values()])
    datagen_seconds, _ = _timed(lambda: datagen.generate_extracts(spark, options, work))
    generate.write(work, load_table_configs(work / "tables"))
    figures.update({"rows": rows, "datagen_s": round(datagen_seconds, 2)})
    figures.update(_parse_figures(work))
    _run_days(work, table, DATES, figures, "", with_tests=not args.skip_tests)
    figures["state_bytes"] = int(_state_detail(spark, table)["sizeInBytes"])
    columns = datagen.table_config(options)["columns"]
    for day, business_date in enumerate(DATES[1:], start=2):
        csv = work / "landing" / table / business_date
        figures[f"day{day}_csv_mib"] = round(
            sum(p.stat().st_size for p in csv.glob("*.csv")) / 2**20, 1
        )
        floor = _copy_floor(spark, columns, csv, work / "copy_floor" / table)
        figures[f"day{day}_copy_floor_s"] = round(floor, 2)
    figures["stage_compute_s"] = round(_stage_compute(spark, work, table, DATES[2]), 2)
    figures["compile_s"] = round(_build(work, DATES[2], table, command="compile"), 2)
    save()
    for peer in peers:
        figures.update(_peer_days(spark, peer, options, ""))
        save()
    for kind in small_changes:
        small = options_by_case[f"{kind}_"]
        datagen.generate_extracts(spark, small, work)
        generate.write(work, load_table_configs(work / "tables"))
        _run_days(work, small.table_name, small.dates, figures, f"{kind}_", not args.skip_tests)
        save()
        for peer in peers:
            figures.update(_peer_days(spark, peer, small, f"{kind}_"))
            save()
        _release(spark, work, small.table_name, args)
    if not args.no_delta:
        figures.update(_fixed_and_weekly_deltas(spark, work, rows, figures, args))
        save()
    if rows <= args.end_to_end_max_rows:
        figures.update(_end_to_end(args.project_dir, work, table))
    _release(spark, work, table, args)


def _fixed_and_weekly_deltas(
    spark: Any, work: Path, rows: int, figures: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    """The same 10,000 changed rows at this size; ``--week-days`` 1% deltas read uncompacted."""
    week_days = args.week_days

    result: dict[str, Any] = {}
    fraction = FIXED_CHANGES / rows
    if math.isclose(fraction, DELTA_FRACTION_CHANGED) and "delta_day2_run_s" in figures:
        result["fixed_delta_day2_run_s"] = figures["delta_day2_run_s"]
    elif fraction < 1:
        fixed = dataclasses.replace(
            _small_change_options(rows, "delta"),
            table_name=f"bench_{rows}_fixed",
            fraction_updated=fraction,
            fraction_unchanged=1 - fraction,
        )
        datagen.generate_extracts(spark, fixed, work)
        generate.write(work, load_table_configs(work / "tables"))
        _run_days(work, fixed.table_name, fixed.dates, result, "fixed_delta_", not args.skip_tests)
        _release(spark, work, fixed.table_name, args)
    week = dataclasses.replace(
        _small_change_options(rows, "delta"),
        table_name=f"bench_{rows}_week",
        dates=business_dates(DATES[0], week_days + 1),
    )
    if not week_days:
        return result
    datagen.generate_extracts(spark, week, work)
    generate.write(work, load_table_configs(work / "tables"))
    # The policy would compact the state on the 7th date: the read is measured without it.
    no_policy = ["--vars", json.dumps({"hashcdc_compact_every_dates": 0})]
    _run_days(
        work, week.table_name, week.dates, result, "week_", with_tests=False, extra_args=no_policy
    )
    result.update(_week_without_compaction(spark, week))
    _release(spark, work, week.table_name, args)
    return result


def business_dates(first: str, count: int) -> tuple[str, ...]:
    """``count`` consecutive dates from ``first`` (ISO)."""
    start = dt.date.fromisoformat(first)
    return tuple((start + dt.timedelta(days=n)).isoformat() for n in range(count))


def _parse_figures(work: Path) -> dict[str, float]:
    """Parse times: the first (full), for a new business date, and with a new ``--vars``.

    A new date costs the second (dbt's partial parse; the date is not one of its vars); a
    plain ``dbt build --vars '{business_date: …}'`` with a new date costs the third.
    """
    full = _build(work, DATES[0], "", command="parse")
    new_date = _build(work, DATES[1], "", command="parse")
    with_vars = _build(
        work,
        DATES[1],
        "",
        command="parse",
        extra_args=["--vars", json.dumps({"business_date": DATES[1]})],
    )
    _build(work, DATES[0], "", command="parse")  # back to no vars, for the runs
    return {
        "dbt_parse_full_s": round(full, 2),
        "dbt_parse_new_date_s": round(new_date, 2),
        "dbt_parse_with_vars_s": round(with_vars, 2),
    }


def main(project_dir: Path, args: argparse.Namespace) -> int:
    """Run the benchmark for every requested size and write the reports."""
    output = args.output if args.output.is_absolute() else project_dir / args.output
    work = _scratch_project(project_dir, output / "work")
    os.chdir(work)

    args.project_dir = project_dir
    jvm, spark = _timed(lambda: session_with(profile_output(work).get("server_side_parameters")))
    metastore, spark = _timed(lambda: spark_session(work))
    jvm_pid = spark.sparkContext._gateway.proc.pid  # noqa: SLF001 - the JVM's pid
    report: dict[str, Any] = {
        "machine": _machine(spark),
        "startup_s": {"jvm": round(jvm, 2), "metastore": round(metastore, 2)},
        "sizes": [],
    }
    output.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        """Write what is measured so far: a long run's figures can be read as it goes."""
        peak = {"jvm": _peak_rss_mib(jvm_pid), "python": _peak_rss_mib(os.getpid())}
        for prefix in PEER_FIGURES.values():
            peaks = [
                s[f"{prefix}_peak_rss_mib"]
                for s in report["sizes"]
                if f"{prefix}_peak_rss_mib" in s
            ]
            if peaks:
                peak[prefix] = max(peaks)
        report["peak_rss_mib"] = peak
        (output / "bench.json").write_text(json.dumps(report, indent=2) + "\n")

    for rows in args.rows:
        report["sizes"].append({})
        bench_size(spark, work, rows, args, report["sizes"][-1], save)
        save()
    markdown = bench_report.markdown(report)
    (output / "bench.md").write_text(markdown)
    if args.report:
        report_path = args.report if args.report.is_absolute() else project_dir / args.report
        report_path.write_text(markdown)
    print(markdown)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0
