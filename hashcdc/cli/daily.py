"""The daily job's commands: run (one or more business dates), replay and query.

A run takes each table's lock, runs dbt in-process date after date in one Spark session,
prints each date's summary and stops a failing table for its later dates while the others
carry on.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import functools
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hashcdc.codegen import generate
from hashcdc.config import TableConfig, load_table_configs
from hashcdc.errors import HashcdcError
from hashcdc.runtime.lock import table_locks
from hashcdc.runtime.project import (
    dbt_args,
    find_project_dir,
    for_business_date,
    invoke_dbt,
    profile_output,
    run_vars,
    spark_session,
    table_selector,
)
from hashcdc.state import audit


def ensure_generated(project_dir: Path, names: Sequence[str]) -> list[TableConfig]:
    """Check the named tables exist and the models match tables/; returns every config."""
    tables = load_table_configs(project_dir / "tables")
    if not tables:
        raise HashcdcError(
            f"no table is configured: {project_dir / 'tables'} has no <name>.yml. Add one "
            "(README: Adding a table), or try `hashcdc demo`."
        )
    known = {t.name for t in tables}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise HashcdcError(
            f"unknown table(s) {', '.join(unknown)}; configured: {', '.join(sorted(known))}"
        )
    problems = generate.check(project_dir, tables)
    if problems:
        raise HashcdcError(
            "the models are out of date with tables/ (run `hashcdc generate` first):\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return sorted(tables, key=lambda t: t.name)


def _active_tables(tables: Sequence[TableConfig], selected: Sequence[str]) -> list[str]:
    """The tables a run processes: the selected (or all) ones, less the paused ones.

    Says which tables are paused; a paused table named in ``--select`` is refused.
    """
    paused = [t for t in tables if not t.enabled]
    named_paused = [t for t in paused if t.name in selected]
    if named_paused:
        raise HashcdcError(
            f"table(s) {', '.join(t.name for t in named_paused)} paused (enabled: false in "
            f"{', '.join(t.config_file for t in named_paused)}): set enabled: true (or remove "
            "the line), run `hashcdc generate`, then run again"
        )
    if paused and not selected:
        print(f"paused, skipped: {', '.join(t.name for t in paused)} (enabled: false)")
    active = [t.name for t in tables if t.enabled and (not selected or t.name in selected)]
    if not active:
        raise HashcdcError("every table is paused (enabled: false): nothing to run")
    return active


def run_log_dir(project_dir: Path, command: str) -> Path:
    """A new folder under logs/ for one hashcdc command's dbt log (dbt.log)."""
    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    folder = project_dir / "logs" / f"{command}-{stamp}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass(frozen=True)
class DateRun:
    """One business date of a run: the tables it builds and its other dbt arguments.

    ``tables`` empty: every table (no ``--select``).
    """

    business_date: str
    tables: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    # Other dbt nodes built with the tables (the demo's seed of expected counts).
    also_select: tuple[str, ...] = ()


@dataclass
class Stops:
    """Tables that failed, each with the date it stopped at; later dates skip them."""

    at: dict[str, str] = field(default_factory=dict)
    # A failure no table can be blamed for (dbt itself failed): every date after stops.
    everything: str | None = None

    def not_run(self, dates: Sequence[str]) -> dict[str, list[str]]:
        """Per stopped table (or ``*`` for all), the later dates that were not run for it."""
        later = {t: [d for d in dates if d > date] for t, date in self.at.items()}
        if self.everything:
            later["*"] = [d for d in dates if d > self.everything]
        return later

    def report(self, command: str, dates: Sequence[str]) -> str:
        """What stopped where, one line each, for standard error."""
        lines = []
        for table, later in sorted(self.not_run(dates).items()):
            where = self.everything if table == "*" else self.at[table]
            what = "every table" if table == "*" else f"table {table}"
            lines.append(
                f"hashcdc {command}: {what} stopped at {where} (see the summary above; "
                "`hashcdc status` shows every table)"
                + (f"; not run for: {', '.join(later)}" if later else "")
            )
        return "\n".join(lines)

    def __bool__(self) -> bool:
        return bool(self.at) or self.everything is not None


def build_dates(
    spark: Any,
    project_dir: Path,
    runs: Sequence[DateRun],
    log_dir: Path,
    after_build: Callable[[Any, float], None] | None = None,
) -> Stops:
    """``dbt build`` each business date in turn, printing a header and the date's summary.

    A table that fails on a date is not built on the later dates (its dates apply in
    order); the other tables carry on. ``after_build`` gets each build's dbt result and
    seconds (``run --profile``). Returns where tables stopped.
    """
    from dbt_common.invocation import get_invocation_id

    out = audit.console()
    table = audit.audit_table(project_dir)
    stops = Stops()
    for run in runs:
        if stops.everything:
            break
        selected = [t for t in run.tables if t not in stops.at]
        if run.tables and not selected:
            continue
        if stops.at and not run.tables:
            active = [name for name in _all_tables(project_dir) if name not in stops.at]
            selected = active
        out.rule(f"business date {run.business_date}")
        started = time.perf_counter()
        selector = table_selector(selected)
        if selector and run.also_select:
            selector += run.also_select
        args = [*run.extra, *selector, "--log-path", str(log_dir)]
        with for_business_date(run.business_date):
            result = invoke_dbt(dbt_args("build", project_dir, args))
        if after_build:
            after_build(result, time.perf_counter() - started)
        rows = audit.invocation_rows(spark, table, [get_invocation_id()])
        if rows:
            audit.print_summary(rows, out)
        else:
            out.print(f"no table of {run.business_date} reached its state model (dbt output above)")
        failed = [row.table_name for row in rows if row.status in audit.FAILED_STATUSES]
        for name in failed:
            stops.at.setdefault(name, run.business_date)
        if not result.success and not failed:
            stops.everything = run.business_date
    return stops


def _all_tables(project_dir: Path) -> list[str]:
    """Every enabled table of the project."""
    return sorted(t.name for t in load_table_configs(project_dir / "tables") if t.enabled)


def cmd_run(args: argparse.Namespace) -> int:
    """Process each ``--date`` in date order, in one Spark session, under the tables' locks."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.runtime.cluster import executor_report

    project_dir = find_project_dir(args.project_dir)
    tables = _active_tables(ensure_generated(project_dir, args.select or []), args.select or [])
    os.chdir(project_dir)
    if args.profile:
        event_log_dir = project_dir / "target" / "spark-events"
        event_log_dir.mkdir(parents=True, exist_ok=True)
        os.environ["HASHCDC_EVENT_LOG"] = "true"
        os.environ["HASHCDC_EVENT_LOG_DIR"] = str(event_log_dir)
    dates = sorted(set(args.date))
    print(
        f"hashcdc run: {len(dates)} date(s) ({dates[0]}..{dates[-1]}) of {', '.join(tables)}; "
        "starting Spark",
        flush=True,
    )
    spark = spark_session(project_dir, args.target)
    log_dir = run_log_dir(project_dir, "run")
    extra = (
        *run_vars(args.allow_mass_delete),
        *(["--target", args.target] if args.target else []),
    )
    runs = [DateRun(d, tuple(args.select or ()), extra) for d in dates]
    profile = functools.partial(_print_profile, project_dir) if args.profile else None
    with table_locks(spark, tables):
        stops = build_dates(spark, project_dir, runs, log_dir, after_build=profile)
    report = executor_report(spark)
    if report:
        print(report)
    print(f"full log: {shown(log_dir / 'dbt.log')}")
    if stops:
        print(
            stops.report("run", dates) + "\nhashcdc run: fix the cause and run those dates again.",
            file=sys.stderr,
        )
        return 1
    return 0


def shown(path: Path) -> str:
    """A path as the user should read it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def cmd_replay(args: argparse.Namespace) -> int:
    """Re-run ``--from`` and every later processed date, in order, from the landing files."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.state.replay import replay_plan

    project_dir = find_project_dir(args.project_dir)
    tables = _active_tables(ensure_generated(project_dir, args.select or []), args.select or [])
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    target = ["--target", args.target] if args.target else []
    with table_locks(spark, tables):
        plan = replay_plan(spark, tables, args.from_date)
        if not plan:
            print(f"hashcdc replay: no processed date on or after {args.from_date}; nothing to do")
            return 0
        dates = sorted(plan)
        print(f"hashcdc replay: {len(dates)} date(s) from {dates[0]} to {dates[-1]}")
        # The last date runs as a normal run: in order again, and it prunes snapshots.
        runs = [
            DateRun(
                business_date,
                tuple(plan[business_date]),
                (
                    *run_vars(args.allow_mass_delete, replay=business_date != dates[-1]),
                    *target,
                ),
            )
            for business_date in dates
        ]
        log_dir = run_log_dir(project_dir, "replay")
        stops = build_dates(spark, project_dir, runs, log_dir)
    print(f"full log: {shown(log_dir / 'dbt.log')}")
    if stops:
        first = min([*stops.at.values(), *([stops.everything] if stops.everything else [])])
        print(
            stops.report("replay", dates) + "\nThe dates before are recomputed. Fix the cause "
            f"and run `hashcdc replay --from {first}`.",
            file=sys.stderr,
        )
        return 1
    print(f"hashcdc replay: recomputed {', '.join(dates)}")
    return 0


def _print_profile(project_dir: Path, result: Any, seconds: float) -> None:
    """Print (and write to target/hashcdc_profile.md) where the run's time went."""
    from pyspark.sql import SparkSession

    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.runtime import profile

    spark = SparkSession.getActiveSession()
    log = None
    if spark is not None:
        log = profile.event_log_file(
            Path(os.environ["HASHCDC_EVENT_LOG_DIR"]), spark.sparkContext.applicationId
        )
    if log is None:
        print("hashcdc: --profile found no Spark event log for this run", file=sys.stderr)
        return
    nodes = profile.node_profiles(result.result)
    unattributed = profile.attribute(nodes, profile.read_stages(log))
    report = profile.render(nodes, unattributed, seconds)
    (project_dir / "target" / "hashcdc_profile.md").write_text(report, encoding="utf-8")
    print("\n" + report)


def cmd_query(args: argparse.Namespace) -> int:
    """Run one SQL query on the project's tables (``--as-of``: as after a business date)."""
    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    from pyspark.errors import AnalysisException, ParseException

    sql, shadowing = args.sql, []
    try:
        if args.as_of:
            # deferred: Spark's modules load only for the commands that use them
            from hashcdc.state.versions import as_of_query

            schema = profile_output(project_dir, args.target)["schema"]
            sql, shadowing = as_of_query(spark, schema, sql, args.as_of)
        frame = spark.sql(sql)
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(frame.columns)
        for row in frame.toLocalIterator():
            writer.writerow(["" if value is None else value for value in row])
    except (AnalysisException, ParseException) as exc:
        # Spark's message names what is wrong and where; its stack is Spark's own.
        raise HashcdcError(f"query: {str(exc).strip().splitlines()[0]}") from None
    finally:
        # The session may serve other commands after this one: its names read as of now.
        for name in shadowing:
            spark.catalog.dropTempView(name)
    return 0
