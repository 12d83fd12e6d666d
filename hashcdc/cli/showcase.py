"""Commands that make data and measure: datagen, demo (the article's example) and bench."""

from __future__ import annotations

import argparse
import json
import os
import sys

from hashcdc.cli.daily import shown
from hashcdc.codegen import generate
from hashcdc.config import load_table_configs
from hashcdc.relations import Relations
from hashcdc.runner.dates import DateRun, build_dates
from hashcdc.runner.preamble import run_log_dir
from hashcdc.runtime.project import (
    find_project_dir,
    spark_session,
)


def cmd_datagen(args: argparse.Namespace) -> int:
    """Write synthetic extracts and their table config (Spark-native, seeded)."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.codegen import datagen

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


def cmd_demo(args: argparse.Namespace) -> int:
    """The article's example end to end in one process: generate, run its dates, count.

    ``--dates N`` runs the first N of the three (the extracts of all three are written).
    """
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.codegen import datagen

    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    print(
        f"hashcdc demo: starting Spark, then generating the extracts of {DEMO_TABLE} "
        f"for {', '.join(DEMO_DATES)}",
        flush=True,
    )
    spark = spark_session(project_dir)
    options = datagen.DatagenOptions(
        table_name=DEMO_TABLE,
        dates=DEMO_DATES,
        seed=42,
        expected_counts_seed="demo_expected_counts",
    )
    datagen.generate_extracts(spark, options, project_dir)
    # Its models, as `hashcdc generate` writes them (a new project has none yet).
    tables = load_table_configs(project_dir / "tables")
    generate.write(project_dir, tables)
    # The demo replays its dates from the start: forget earlier demo runs.
    demo_table = next(t for t in tables if t.name == DEMO_TABLE)
    for relation, is_view in generate.relations(demo_table):
        spark.sql(f"drop {'view' if is_view else 'table'} if exists {relation}")
    counts_sql = (
        "select '{relation}' as relation, operation, count(*) as row_count "
        "from {table} {where} group by operation order by operation"
    )
    summary: list[str] = []
    log_dir = run_log_dir(project_dir, "demo")
    for business_date in DEMO_DATES[: args.dates]:
        # The demo's seed of expected counts is built with it.
        run = DateRun(business_date, (DEMO_TABLE,), also_select=("demo_expected_counts",))
        if build_dates(spark, project_dir, [run], log_dir):
            print(
                f"demo: business date {business_date} failed (see above; full log: "
                f"{shown(log_dir / 'dbt.log')})",
                file=sys.stderr,
            )
            return 1
        current = spark.sql(
            counts_sql.format(relation="current", table=Relations(DEMO_TABLE).current, where="")
        ).collect()
        history = spark.sql(
            counts_sql.format(
                relation="history",
                table=Relations(DEMO_TABLE).history,
                where=f"where business_date = date'{business_date}'",
            )
        ).collect()
        summary.append(
            f"{business_date}  current: {_counts_text(current):<26} "
            f"history: {_counts_text(history)}"
        )
    print("\nOperations per business date (table article_demo):")
    print("\n".join(summary))
    print(f"full log: {shown(log_dir / 'dbt.log')}")
    return 0


def _reported(table: str, args: argparse.Namespace) -> int:
    """Print a bench's markdown table, and write it to ``--report`` when given."""
    print(table, end="")
    if args.report:
        args.report.write_text(table)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmark (:mod:`hashcdc.bench`) and report it."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.bench import run as bench

    if args.formats:
        # deferred: Spark's modules load only for the commands that use them
        from hashcdc.bench import formats as bench_formats

        return _reported(bench_formats.markdown(bench_formats.run(args.rows, args.output)), args)
    project_dir = find_project_dir(args.project_dir)
    output = args.output if args.output.is_absolute() else project_dir / args.output
    if args.engine:
        # deferred: Spark's modules load only for the commands that use them
        from hashcdc.bench import engine as engine_bench

        return _reported(engine_bench.markdown(engine_bench.run(project_dir, output)), args)
    if args.stream:
        # deferred: Spark's modules load only for the commands that use them
        from hashcdc.bench import stream as stream_bench

        for rows in args.rows:
            figures = stream_bench.run(
                project_dir, rows, args.rate, args.seconds, args.kafka, max(1, args.tables)
            )
            print(json.dumps(figures), flush=True)
        return 0
    if args.tables:
        # deferred: the bench's modules load only for the commands that use them
        from hashcdc.bench import tables as tables_bench

        figures = tables_bench.run(
            project_dir,
            output,
            args.tables,
            group=args.group,
            distinct=args.distinct,
            spark_peer="dbt-spark" in (args.peer or []),
            keep=args.keep,
        )
        return _reported(tables_bench.markdown(figures), args)
    if args.capture:
        # deferred: Spark's modules load only for the commands that use them
        from hashcdc.bench import capture as capture_bench

        for rows in args.rows:
            figures = capture_bench.run(project_dir, args.capture, rows)
            print(json.dumps(figures), flush=True)
        return 0
    return bench.main(project_dir, args)
