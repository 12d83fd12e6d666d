"""The ``hashcdc`` command: validate, generate, run, replay, query, demo, datagen, bench.

Run it from the project folder, like dbt. Every user-facing failure is one message on
stderr and a non-zero exit status, never a stack trace.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hashcdc import generate
from hashcdc.config import EXTRACT_TYPES, SCHEMA, load_table_configs
from hashcdc.dates import parse_business_date
from hashcdc.errors import HashcdcError
from hashcdc.lock import table_locks
from hashcdc.project import (
    business_date_vars,
    dbt_args,
    find_project_dir,
    invoke_dbt,
    spark_session,
    table_selector,
)


def _date(text: str) -> str:
    try:
        return parse_business_date(text)
    except HashcdcError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_processing_options(parser: argparse.ArgumentParser) -> None:
    """The options that `run` and `replay` share: which tables, where, and mass deletes."""
    parser.add_argument("--select", nargs="+", metavar="TABLE", help="only these tables")
    parser.add_argument("--target", help="profile target (default: local)")
    parser.add_argument(
        "--allow-mass-delete",
        action="store_true",
        help="accept full extracts that delete more than the table's max_delete_fraction",
    )


def _cmd_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema of tables/<name>.yml (for editors and other tools)."""
    del args
    print(json.dumps(SCHEMA, indent=2, ensure_ascii=False))
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    print(f"{len(tables)} table config(s) valid: {', '.join(t.name for t in tables)}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    if args.check:
        problems = generate.check(project_dir, tables)
        if problems:
            print(
                "generated files differ from tables/ (run `hashcdc generate`):\n"
                + "\n".join(f"  - {p}" for p in problems),
                file=sys.stderr,
            )
            return 1
        print(f"generated files match {len(tables)} table config(s)")
        return 0
    changed = generate.write(project_dir, tables)
    for path in changed:
        print(f"wrote {path}")
    print(f"{len(changed)} file(s) changed for {len(tables)} table(s)")
    return 0


def _ensure_generated(project_dir: Path, names: Sequence[str]) -> list[str]:
    """Check the named tables exist and the models match tables/; returns all table names."""
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
    return sorted(known)


def _cmd_run(args: argparse.Namespace) -> int:
    """Process each ``--date`` in date order, in one Spark session, under the tables' locks."""
    from hashcdc.cluster import executor_report

    project_dir = find_project_dir(args.project_dir)
    tables = _ensure_generated(project_dir, args.select or [])
    os.chdir(project_dir)
    if args.profile:
        event_log_dir = project_dir / "target" / "spark-events"
        event_log_dir.mkdir(parents=True, exist_ok=True)
        os.environ["HASHCDC_EVENT_LOG"] = "true"
        os.environ["HASHCDC_EVENT_LOG_DIR"] = str(event_log_dir)
    spark = spark_session(project_dir, args.target)
    dates, failed = sorted(set(args.date)), None
    with table_locks(spark, args.select or tables):
        for business_date in dates:
            extra = [
                "--vars",
                business_date_vars(business_date, args.allow_mass_delete),
                *table_selector(args.select or []),
                *(["--target", args.target] if args.target else []),
            ]
            started = time.perf_counter()
            result = invoke_dbt(dbt_args("build", project_dir, extra))
            if args.profile:
                _print_profile(project_dir, result, time.perf_counter() - started)
            if not result.success:
                failed = business_date
                break
    report = executor_report(spark)
    if report:
        print(report)
    if failed:
        later = [d for d in dates if d > failed]
        print(
            f"hashcdc run --date {failed}: failed (see the dbt output above)"
            + (f"; not run: {', '.join(later)}" if later else ""),
            file=sys.stderr,
        )
        return 1
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    """Re-run ``--from`` and every later processed date, in order, from the landing files."""
    from hashcdc.replay import replay_plan

    project_dir = find_project_dir(args.project_dir)
    tables = args.select or _ensure_generated(project_dir, [])
    if args.select:
        _ensure_generated(project_dir, tables)
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
        for business_date in dates:
            # The last date runs as a normal run: in order again, and it prunes snapshots.
            replaying = business_date != dates[-1]
            extra = [
                "--vars",
                business_date_vars(business_date, args.allow_mass_delete, replay=replaying),
                *table_selector(plan[business_date]),
                *target,
            ]
            if not invoke_dbt(dbt_args("build", project_dir, extra)).success:
                print(
                    f"hashcdc replay: stopped at {business_date} (see the dbt output above); "
                    f"the dates before it are recomputed. Fix the cause and run `hashcdc "
                    f"replay --from {business_date}`.",
                    file=sys.stderr,
                )
                return 1
    print(f"hashcdc replay: recomputed {', '.join(dates)}")
    return 0


def _print_profile(project_dir: Path, result: Any, seconds: float) -> None:
    """Print (and write to target/hashcdc_profile.md) where the run's time went."""
    from pyspark.sql import SparkSession

    from hashcdc import profile

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


def _cmd_query(args: argparse.Namespace) -> int:
    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    frame = spark.sql(args.sql)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(frame.columns)
    for row in frame.toLocalIterator():
        writer.writerow(["" if value is None else value for value in row])
    return 0


def _cmd_datagen(args: argparse.Namespace) -> int:
    from hashcdc import datagen

    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    options = datagen.DatagenOptions(
        table_name=args.table,
        initial_records=args.initial_records,
        incremental_records=args.incremental_records or args.initial_records,
        key_columns=args.key_columns,
        non_key_columns=args.non_key_columns,
        fraction_deleted=args.fraction_deleted,
        fraction_updated=args.fraction_updated,
        fraction_unchanged=args.fraction_unchanged,
        dates=args.dates,
        output=args.output,
        seed=args.seed,
        extract_type=args.extract_type,
        redeliver=args.redeliver,
        out_of_order=args.out_of_order,
    )
    written = datagen.generate_extracts(spark, options, project_dir)
    for path in written:
        print(f"wrote {path}")
    return 0


def _counts_text(rows: list) -> str:
    return " ".join(f"{row.operation}={row.row_count}" for row in rows)


DEMO_TABLE = "article_demo"
DEMO_DATES = ("2019-06-18", "2019-06-19", "2019-06-20")


def _cmd_demo(args: argparse.Namespace) -> int:
    """The article's example end to end in one process: generate, run 3 dates, count."""
    from hashcdc import datagen

    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    spark = spark_session(project_dir)
    options = datagen.DatagenOptions(
        table_name=DEMO_TABLE,
        dates=DEMO_DATES,
        seed=42,
        expected_counts_seed="demo_expected_counts",
    )
    datagen.generate_extracts(spark, options, project_dir)
    _ensure_generated(project_dir, [DEMO_TABLE])
    # The demo replays its dates from the start: forget earlier demo runs.
    demo_table = next(t for t in load_table_configs(project_dir / "tables") if t.name == DEMO_TABLE)
    for relation, is_view in generate.relations(demo_table):
        spark.sql(f"drop {'view' if is_view else 'table'} if exists {relation}")
    counts_sql = (
        "select '{relation}' as relation, operation, count(*) as row_count "
        "from {table} {where} group by operation order by operation"
    )
    summary: list[str] = []
    for business_date in DEMO_DATES:
        extra = [
            "--vars",
            business_date_vars(business_date),
            *table_selector([DEMO_TABLE]),
            "demo_expected_counts",
        ]
        result = invoke_dbt(dbt_args("build", project_dir, extra))
        if not result.success:
            print(f"demo: business date {business_date} failed", file=sys.stderr)
            return 1
        current = spark.sql(
            counts_sql.format(relation="current", table=f"{DEMO_TABLE}_current", where="")
        ).collect()
        history = spark.sql(
            counts_sql.format(
                relation="history",
                table=f"{DEMO_TABLE}_history",
                where=f"where business_date = date'{business_date}'",
            )
        ).collect()
        summary.append(
            f"{business_date}  current: {_counts_text(current):<26} "
            f"history: {_counts_text(history)}"
        )
    print("\nOperations per business date (table article_demo):")
    print("\n".join(summary))
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from hashcdc import bench

    project_dir = find_project_dir(args.project_dir)
    return bench.main(project_dir, args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hashcdc`` command."""
    parser = argparse.ArgumentParser(
        prog="hashcdc", description="Config-driven hash-diff CDC as a dbt project on Spark."
    )
    parser.add_argument(
        "--project-dir", type=Path, default=None, help="the project folder (default: .)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("validate", help="check every tables/*.yml; list every problem")
    sub.add_parser("schema", help="print the JSON Schema of tables/<name>.yml (for editors)")

    gen = sub.add_parser("generate", help="write the model files of every table config")
    gen.add_argument("--check", action="store_true", help="only compare; exit 1 on drift")

    run = sub.add_parser("run", help="process business dates (dbt build per date)")
    run.add_argument(
        "--date",
        required=True,
        nargs="+",
        type=_date,
        help="business date(s), YYYY-MM-DD; several run in date order in one Spark session",
    )
    _add_processing_options(run)
    run.add_argument(
        "--profile",
        action="store_true",
        help="report time per dbt node and per Spark stage (target/hashcdc_profile.md)",
    )

    replay = sub.add_parser(
        "replay", help="recompute a date and every later processed date, in order"
    )
    replay.add_argument(
        "--from", dest="from_date", required=True, type=_date, help="first date, YYYY-MM-DD"
    )
    _add_processing_options(replay)

    query = sub.add_parser("query", help="run Spark SQL; CSV with a header on stdout")
    query.add_argument("sql")
    query.add_argument("--target", help="profile target (default: local)")

    gen_data = sub.add_parser("datagen", help="generate synthetic daily extracts + table config")
    gen_data.add_argument("--table", default="synthetic", help="table name")
    gen_data.add_argument("--initial-records", type=int, default=10_000)
    gen_data.add_argument("--incremental-records", type=int, default=None)
    gen_data.add_argument("--key-columns", type=int, default=5)
    gen_data.add_argument("--non-key-columns", type=int, default=10)
    gen_data.add_argument("--fraction-deleted", type=float, default=0.2)
    gen_data.add_argument("--fraction-updated", type=float, default=0.4)
    gen_data.add_argument("--fraction-unchanged", type=float, default=0.4)
    gen_data.add_argument(
        "--dates",
        nargs="+",
        type=_date,
        default=["2019-06-18", "2019-06-19"],
        help="business dates: the first gets the initial extract, each next one a change",
    )
    gen_data.add_argument(
        "--output",
        default="landing/{table}",
        help="output folder; one sub-folder per business date (default: landing/{table})",
    )
    gen_data.add_argument(
        "--extract-type",
        choices=EXTRACT_TYPES,
        default="full",
        help="delta: later dates hold only the new and updated rows; changes: Debezium JSON "
        "change events",
    )
    gen_data.add_argument(
        "--redeliver",
        action="store_true",
        help="changes: put the previous date's files into each date's folder again",
    )
    gen_data.add_argument(
        "--out-of-order",
        action="store_true",
        help="changes: shuffle each date's events over several files",
    )
    gen_data.add_argument("--seed", type=int, default=42)
    gen_data.add_argument("--target", help="profile target (default: local)")

    sub.add_parser("demo", help="the article's example: 10,000 rows over 3 business dates")

    bench_parser = sub.add_parser("bench", help="benchmark day 2 against the copy floor")
    bench_parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    bench_parser.add_argument("--repeat", type=int, default=1)
    bench_parser.add_argument("--output", type=Path, default=Path("bench_output"))
    bench_parser.add_argument(
        "--report", type=Path, default=None, help="also write the markdown table here"
    )
    bench_parser.add_argument("--keep", action="store_true", help="keep the scratch project")
    bench_parser.add_argument(
        "--no-delta",
        action="store_true",
        help="skip the 1%% delta extract and change feed measurements",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hashcdc`` console script."""
    args = build_parser().parse_args(argv)
    handlers = {
        "validate": _cmd_validate,
        "schema": _cmd_schema,
        "generate": _cmd_generate,
        "run": _cmd_run,
        "replay": _cmd_replay,
        "query": _cmd_query,
        "datagen": _cmd_datagen,
        "bench": _cmd_bench,
        "demo": _cmd_demo,
    }
    try:
        return handlers[args.command](args)
    except HashcdcError as exc:
        print(f"hashcdc: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # Whoever read our output stopped early (`| head`): not a failure of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
