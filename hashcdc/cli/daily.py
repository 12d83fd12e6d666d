"""The daily job's commands: run (one or more business dates), replay and query.

A run takes each table's lock, runs dbt in-process date after date in one Spark session,
prints each date's summary and stops a failing table for its later dates while the others
carry on.
"""

from __future__ import annotations

import argparse
import csv
import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

from hashcdc.errors import HashcdcError
from hashcdc.runner.dates import DateRun, build_dates
from hashcdc.runner.preamble import prepare
from hashcdc.runtime.project import (
    find_project_dir,
    profile_output,
    run_vars,
    spark_session,
)

# A query's answer of at most this many rows is taken at once; a longer one is streamed.
QUERY_TAKE_ROWS = 10_000


def record_event_log(project_dir: Path) -> None:
    """Have the Spark session write its event log (``run --profile`` reads it).

    Through the profile's variables: a session writes it only if it starts so (an engine
    started without it is restarted for the command, its settings differing).
    """
    event_log_dir = project_dir / "target" / "spark-events"
    event_log_dir.mkdir(parents=True, exist_ok=True)
    os.environ["HASHCDC_EVENT_LOG"] = "true"
    os.environ["HASHCDC_EVENT_LOG_DIR"] = str(event_log_dir)


def cmd_run(args: argparse.Namespace) -> int:
    """Process each ``--date`` in date order, in one Spark session, under the tables' locks."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.runtime.cluster import executor_report

    dates = sorted(set(args.date))
    if args.profile:
        record_event_log(find_project_dir(args.project_dir))
    work = prepare(
        args.project_dir,
        args.select or [],
        args.target,
        "run",
        lambda configs, tables: (
            f"hashcdc run: {len(dates)} date(s) ({dates[0]}..{dates[-1]}) of "
            f"{', '.join(tables)}; starting Spark"
        ),
    )
    project_dir, spark, log_dir = work.project_dir, work.spark, work.log_dir
    extra = (
        *run_vars(args.allow_mass_delete),
        *(["--target", args.target] if args.target else []),
    )
    runs = [DateRun(d, tuple(args.select or ()), extra) for d in dates]
    profile = functools.partial(_print_profile, project_dir, spark) if args.profile else None
    with work.locked():
        work.join_groups(args.target)
        stops = build_dates(
            spark, project_dir, runs, log_dir, after_build=profile, configs=work.configs
        )
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

    work = prepare(args.project_dir, args.select or [], args.target, "replay")
    project_dir, spark, log_dir = work.project_dir, work.spark, work.log_dir
    target = ["--target", args.target] if args.target else []
    with work.locked():
        work.join_groups(args.target)
        groups = {t.name: t.group for t in work.configs if t.group is not None}
        plan = replay_plan(spark, work.tables, args.from_date, groups)
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
        stops = build_dates(spark, project_dir, runs, log_dir, configs=work.configs)
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


def _print_profile(project_dir: Path, spark: Any, result: Any, seconds: float) -> None:
    """Print (and write to target/hashcdc_profile.md) where the run's time went."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.runtime import profile

    log = profile.event_log_file(
        Path(os.environ["HASHCDC_EVENT_LOG_DIR"]), spark.sparkContext.applicationId
    )
    if log is None:
        print("hashcdc: --profile found no Spark event log for this run", file=sys.stderr)
        return
    nodes = profile.node_profiles(result.result)
    # This build's jobs only: an engine's application has run other commands before.
    since_ms = int((time.time() - seconds) * 1000)
    stages, jobs = profile.read_event_log(log, since_ms)
    unattributed, outside = profile.attribute(nodes, stages, jobs)
    report = profile.render(nodes, unattributed, seconds, outside)
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
        # A short answer in one job; a long one is streamed partition by partition, so the
        # driver never holds it whole (a job per partition and a socket: a second more).
        first = frame.take(QUERY_TAKE_ROWS + 1)
        rows = first if len(first) <= QUERY_TAKE_ROWS else frame.toLocalIterator()
        for row in rows:
            writer.writerow(["" if value is None else value for value in row])
    except (AnalysisException, ParseException) as exc:
        # Spark's message names what is wrong and where; its stack is Spark's own.
        raise HashcdcError(f"query: {str(exc).strip().splitlines()[0]}") from None
    finally:
        # The session may serve other commands after this one: its names read as of now.
        for name in shadowing:
            spark.catalog.dropTempView(name)
    return 0
