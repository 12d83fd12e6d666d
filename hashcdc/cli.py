"""The ``hashcdc`` command: validate, check, generate, run, replay, status, report, drop, ….

Run it from the project folder, like dbt. Every user-facing failure is one message on
stderr and a non-zero exit status, never a stack trace.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hashcdc import audit, generate
from hashcdc.config import EXTRACT_TYPES, SCHEMA, TableConfig, load_table_configs
from hashcdc.dates import parse_business_date
from hashcdc.errors import HashcdcError, InputDataError
from hashcdc.lock import table_locks
from hashcdc.project import (
    dbt_args,
    find_project_dir,
    for_business_date,
    invoke_dbt,
    profile_output,
    run_vars,
    spark_session,
    table_selector,
)
from hashcdc.relations import Relations


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
    return _report_stale_models(project_dir, tables)


def _report_stale_models(project_dir: Path, tables: list[TableConfig]) -> int:
    """Say whether the generated models match the configs; 1 when they do not."""
    problems = generate.check(project_dir, tables)
    if problems:
        print(
            "generated models are out of date with tables/ (run `hashcdc generate`):\n"
            + "\n".join(f"  - {p}" for p in problems),
            file=sys.stderr,
        )
        return 1
    print(f"generated models are current ({len(tables)} table config(s))")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    """Everything a run needs, checked before it: configs, models and the dates' extracts."""
    from hashcdc.project import files_session
    from hashcdc.stage import checked_extract

    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    print(f"{len(tables)} table config(s) valid: {', '.join(t.name for t in tables)}")
    status = _report_stale_models(project_dir, tables)
    selected = [t for t in tables if t.enabled and (not args.select or t.name in args.select)]
    if not args.date or not selected:
        return status
    os.chdir(project_dir)
    spark = files_session(project_dir, args.target)
    for business_date in sorted(set(args.date)):
        for table in selected:
            try:
                files = checked_extract(spark, table, business_date)
            except InputDataError as problem:
                print(f"{business_date} {problem}", file=sys.stderr)
                status = 1
            else:
                print(f"{business_date} table '{table.name}': {len(files)} file(s), columns match")
    return status


def _cmd_status(args: argparse.Namespace) -> int:
    """One line per table: paused or not, last date and run, counts, lag."""
    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    runs = audit.latest_runs(spark, audit.audit_table(project_dir))
    audit.console().print(audit.status_table(tables, runs, dt.date.today()))
    return 0


def _cmd_upgrade(args: argparse.Namespace) -> int:
    """Convert the states a release before the Delta layout wrote (each in one commit)."""
    from hashcdc.upgrade import upgrade_states

    project_dir = find_project_dir(args.project_dir)
    configs = load_table_configs(project_dir / "tables")
    names = set(args.select or [t.name for t in configs])
    tables = [t for t in configs if t.name in names]
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    schema = profile_output(project_dir, args.target)["schema"]
    with table_locks(spark, sorted(names)):
        upgraded = [name for t in tables for name in upgrade_states(spark, schema, t)]
    print(
        f"hashcdc upgrade: {len(upgraded)} state table(s) converted"
        if upgraded
        else "hashcdc upgrade: every state is already a Delta table; nothing to do"
    )
    return 0


def _cmd_compact(args: argparse.Namespace) -> int:
    """Compact the states (OPTIMIZE) and drop the files of versions no longer kept."""
    from hashcdc.audit import project_var
    from hashcdc.maintenance import compact
    from hashcdc.upgrade import state_tables

    project_dir = find_project_dir(args.project_dir)
    configs = load_table_configs(project_dir / "tables")
    names = set(args.select or [t.name for t in configs])
    kept = int(str(project_var(project_dir, "hashcdc_state_snapshots_kept")))
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    schema = profile_output(project_dir, args.target)["schema"]
    with table_locks(spark, sorted(names)):
        for table in (t for t in configs if t.name in names):
            for state in state_tables(schema, table):
                print(f"{state}: compacting", flush=True)
                done = compact(spark, state, kept)
                print(done.summary() if done else f"{state}: not a Delta state yet", flush=True)
    return 0


def _cmd_drop(args: argparse.Namespace) -> int:
    """Remove a table: its config and generated models, and (confirmed) its relations."""
    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    table = next((t for t in tables if t.name == args.name), None)
    if table is None:
        raise HashcdcError(
            f"no table '{args.name}'; configured: {', '.join(t.name for t in tables) or 'none'}"
        )
    files = [project_dir / table.config_file] + [
        project_dir / g.path for g in generate.generated_files([table])
    ]
    relations = generate.relations(table)
    print(f"table '{table.name}': the config and generated models:")
    print("\n".join(f"  {_shown(f)}" for f in files if f.exists()))
    drop_data = not args.keep_data
    if drop_data:
        print(f"and its data: {', '.join(name for name, _ in relations)}")
        if not args.yes:
            if not sys.stdin.isatty():
                raise HashcdcError(
                    "dropping data needs confirmation: run it in a terminal, or add --yes "
                    "(or --keep-data to remove only the config and models)"
                )
            answer = input(f"Type '{table.name}' to drop its data for good: ").strip()
            if answer != table.name:
                print("nothing dropped")
                return 1
        os.chdir(project_dir)
        spark = spark_session(project_dir, args.target)
        with table_locks(spark, [table.name]):
            for name, is_view in relations:
                spark.sql(f"drop {'view' if is_view else 'table'} if exists {name}")
    for path in files:
        path.unlink(missing_ok=True)
    for folder in {f.parent for f in files}:
        if folder.exists() and not any(folder.iterdir()):
            folder.rmdir()
    print(
        f"dropped table '{table.name}'"
        + ("" if drop_data else " (its data is kept)")
        + f"; its runs stay in {audit.audit_table(project_dir)}"
    )
    return 0


def _cmd_init(args: argparse.Namespace) -> int:
    """Write tables/NAME.yml from a sample extract; the user marks the keys."""
    from hashcdc.sample import table_yaml_from_sample

    project_dir = find_project_dir(args.project_dir)
    target = project_dir / "tables" / f"{args.name}.yml"
    if target.exists() and not args.force:
        raise HashcdcError(f"{_shown(target)} exists; choose another name or add --force")
    text = table_yaml_from_sample(project_dir, args.name, args.sample, args.delimiter)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {_shown(target)} from {args.sample}")
    print(
        "next: mark the key column(s) with `key: true`, check the types and source.path, "
        f"then `hashcdc generate` and `hashcdc check --date YYYY-MM-DD --select {args.name}`"
    )
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    """Write one self-contained HTML page with charts of every run in the audit."""
    from hashcdc.report import write_report

    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    out = write_report(spark, audit.audit_table(project_dir), tables, args.out, dt.date.today())
    print(f"wrote {_shown(out.resolve())}")
    return 0


def _cmd_docs(args: argparse.Namespace) -> int:
    """Generate dbt docs as one page (target/static_index.html); --serve serves them."""
    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    spark_session(project_dir, args.target)
    target = ["--target", args.target] if args.target else []
    generate_args = ["--static", *target]
    if not invoke_dbt(dbt_args("docs generate", project_dir, generate_args)).success:
        raise HashcdcError("dbt docs generate failed (see the dbt output above)")
    page = project_dir / "target" / "static_index.html"
    print(f"docs: {_shown(page)} (one file: open it in a browser, or copy it anywhere)")
    if args.serve:
        print(f"serving target/ on http://127.0.0.1:{args.port} (Ctrl-C stops)")
        invoke_dbt(dbt_args("docs serve", project_dir, ["--port", str(args.port), "--no-browser"]))
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    if args.check:
        return _report_stale_models(project_dir, tables)
    changed = generate.write(project_dir, tables)
    for path in changed:
        print(f"wrote {path}")
    print(f"{len(changed)} file(s) changed for {len(tables)} table(s)")
    return 0


def _ensure_generated(project_dir: Path, names: Sequence[str]) -> list[TableConfig]:
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


def _run_log_dir(project_dir: Path, command: str) -> Path:
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


def _build_dates(
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


def _cmd_run(args: argparse.Namespace) -> int:
    """Process each ``--date`` in date order, in one Spark session, under the tables' locks."""
    from hashcdc.cluster import executor_report

    project_dir = find_project_dir(args.project_dir)
    tables = _active_tables(_ensure_generated(project_dir, args.select or []), args.select or [])
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
    log_dir = _run_log_dir(project_dir, "run")
    extra = (
        *run_vars(args.allow_mass_delete),
        *(["--target", args.target] if args.target else []),
    )
    runs = [DateRun(d, tuple(args.select or ()), extra) for d in dates]
    profile = functools.partial(_print_profile, project_dir) if args.profile else None
    with table_locks(spark, tables):
        stops = _build_dates(spark, project_dir, runs, log_dir, after_build=profile)
    report = executor_report(spark)
    if report:
        print(report)
    print(f"full log: {_shown(log_dir / 'dbt.log')}")
    if stops:
        print(
            stops.report("run", dates) + "\nhashcdc run: fix the cause and run those dates again.",
            file=sys.stderr,
        )
        return 1
    return 0


def _shown(path: Path) -> str:
    """A path as the user should read it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _cmd_replay(args: argparse.Namespace) -> int:
    """Re-run ``--from`` and every later processed date, in order, from the landing files."""
    from hashcdc.replay import replay_plan

    project_dir = find_project_dir(args.project_dir)
    tables = _active_tables(_ensure_generated(project_dir, args.select or []), args.select or [])
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
        log_dir = _run_log_dir(project_dir, "replay")
        stops = _build_dates(spark, project_dir, runs, log_dir)
    print(f"full log: {_shown(log_dir / 'dbt.log')}")
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
    if args.as_of:
        from hashcdc.versions import as_of_views

        schema = profile_output(project_dir, args.target)["schema"]
        as_of_views(spark, schema, args.as_of)
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
    log_dir = _run_log_dir(project_dir, "demo")
    for business_date in DEMO_DATES:
        # The demo's seed of expected counts is built with it.
        run = DateRun(business_date, (DEMO_TABLE,), also_select=("demo_expected_counts",))
        if _build_dates(spark, project_dir, [run], log_dir):
            print(
                f"demo: business date {business_date} failed (see above; full log: "
                f"{_shown(log_dir / 'dbt.log')})",
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
    print(f"full log: {_shown(log_dir / 'dbt.log')}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from hashcdc import bench

    if args.formats:
        from hashcdc import bench_formats

        report = bench_formats.run(args.rows, args.output)
        table = bench_formats.markdown(report)
        print(table, end="")
        if args.report:
            args.report.write_text(table)
        return 0
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

    sub.add_parser(
        "validate", help="check every tables/*.yml (listing every problem) and the models"
    )
    check = sub.add_parser(
        "check",
        help="before a run: configs, generated models, and each date's extract (present, "
        "readable, columns as configured), without running dbt",
    )
    check.add_argument("--date", nargs="+", type=_date, default=[], help="YYYY-MM-DD")
    check.add_argument("--select", nargs="+", metavar="TABLE", help="only these tables")
    check.add_argument("--target", help="profile target (default: local)")
    status = sub.add_parser("status", help="one line per table: last run, counts, lag")
    status.add_argument("--target", help="profile target (default: local)")
    drop = sub.add_parser(
        "drop", help="remove a table's config and models and, after confirmation, its data"
    )
    drop.add_argument("name")
    drop.add_argument("--yes", action="store_true", help="drop the data without asking")
    drop.add_argument("--keep-data", action="store_true", help="keep the tables and views")
    drop.add_argument("--target", help="profile target (default: local)")
    init = sub.add_parser("init", help="write tables/NAME.yml from a sample extract")
    init.add_argument("name")
    init.add_argument("--sample", required=True, type=Path, help="a CSV or parquet extract")
    init.add_argument("--delimiter", default=",", help="CSV delimiter (default ,)")
    init.add_argument("--force", action="store_true", help="overwrite tables/NAME.yml")
    report = sub.add_parser("report", help="one HTML page with charts of every run")
    report.add_argument("--out", type=Path, default=Path("target/report.html"))
    report.add_argument("--target", help="profile target (default: local)")
    docs = sub.add_parser("docs", help="generate dbt docs (one page); --serve to serve them")
    docs.add_argument("--serve", action="store_true")
    docs.add_argument("--port", type=int, default=8080)
    docs.add_argument("--target", help="profile target (default: local)")
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
    query.add_argument(
        "--as-of",
        type=_date,
        metavar="DATE",
        help="read the tables as they were after this business date (the states' versions)",
    )

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

    upgrade = sub.add_parser(
        "upgrade", help="convert the states of an earlier release to Delta tables (history kept)"
    )
    upgrade.add_argument("--select", nargs="+", metavar="TABLE", help="only these tables")
    upgrade.add_argument("--target", help="profile target (default: local)")

    compact_parser = sub.add_parser(
        "compact",
        help="compact the states' files and apply their retention (Delta OPTIMIZE, VACUUM)",
    )
    compact_parser.add_argument("--select", nargs="+", metavar="TABLE", help="only these tables")
    compact_parser.add_argument("--target", help="profile target (default: local)")

    bench_parser = sub.add_parser(
        "bench", help="benchmark the days of four cases against the copy floor and a peer"
    )
    bench_parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    bench_parser.add_argument(
        "--peer",
        choices=["dbt-duckdb", "dbt-spark"],
        action="append",
        default=None,
        help="also run a peer (a dbt snapshot on dbt-duckdb or dbt-spark) over the same files; "
        "repeat for both",
    )
    bench_parser.add_argument(
        "--end-to-end-max-rows",
        type=int,
        default=1_000_000,
        help="time `hashcdc run` of day 2 in its own process for sizes up to this many rows",
    )
    bench_parser.add_argument(
        "--week-days",
        type=int,
        default=7,
        help="uncompacted 1%% delta days before reading `current`, then compacting (0: skip)",
    )
    bench_parser.add_argument(
        "--skip-tests", action="store_true", help="do not run and time each date's dbt tests"
    )
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
    bench_parser.add_argument(
        "--formats",
        action="store_true",
        help="only measure Delta Lake and Iceberg on the state's shape (a typical day's MERGE)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hashcdc`` console script."""
    args = build_parser().parse_args(argv)
    handlers = {
        "validate": _cmd_validate,
        "check": _cmd_check,
        "status": _cmd_status,
        "drop": _cmd_drop,
        "init": _cmd_init,
        "report": _cmd_report,
        "docs": _cmd_docs,
        "schema": _cmd_schema,
        "generate": _cmd_generate,
        "run": _cmd_run,
        "replay": _cmd_replay,
        "upgrade": _cmd_upgrade,
        "compact": _cmd_compact,
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
