"""Commands about the tables' state and upkeep: status, upgrade, compact, drop, report."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys

from hashcdc.cli.daily import shown
from hashcdc.codegen import generate
from hashcdc.config import load_table_configs
from hashcdc.engine import client as engine_client
from hashcdc.engine.place import Place
from hashcdc.errors import HashcdcError
from hashcdc.runtime.lock import table_locks
from hashcdc.runtime.project import (
    find_project_dir,
    profile_output,
    spark_session,
)
from hashcdc.state import audit, failures, service_levels


def cmd_status(args: argparse.Namespace) -> int:
    """One line per table: paused or not, last date and run, counts, lag."""
    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    audit_table = audit.audit_table(project_dir)
    runs = audit.latest_runs(spark, audit_table)
    # Naive, in this process's zone: as Spark hands the audit's timestamps to Python.
    local_now = dt.datetime.now()
    default = service_levels.project_default(project_dir)
    oldest = max(span for _, span in service_levels.WINDOWS)
    samples = service_levels.audit_samples(spark, audit_table, local_now - oldest)
    levels = {
        table.name: service_levels.slo_text(
            objective,
            service_levels.attainments(
                objective, service_levels.table_samples(table, samples), local_now
            ),
        )
        for table in tables
        if (objective := service_levels.objective_of(table, default)) is not None
    }
    since = local_now - failures.STATUS_SPAN
    counted = failures.totals(failures.audit_failures(spark, audit_table, since))
    stops = failures.stream_stops(project_dir)
    cells = {t.name: failures.failures_text(counted.get(t.name), stops.get(t.name)) for t in tables}
    audit.console().print(audit.status_table(tables, runs, dt.date.today(), levels, cells))
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.capture.status import capture_table
    from hashcdc.cli.capture import CAPTURE_STATE_DIR

    now = dt.datetime.now(dt.UTC)
    captured = capture_table(tables, project_dir / CAPTURE_STATE_DIR, now)
    if captured is not None:
        audit.console().print(captured)
    print(engine_client.describe(engine_client.status(Place.of(project_dir))))
    if not args.check:
        return 0
    problems = service_levels.breaches(tables, default, samples, runs, local_now)
    problems += failures.stopped_lines(stops, [t.name for t in tables if t.enabled])
    for problem in problems:
        print(f"hashcdc status --check: {problem}", file=sys.stderr)
    return 1 if problems else 0


def cmd_upgrade(args: argparse.Namespace) -> int:
    """Bring an earlier release's tables to the current layout (Delta, INT64 timestamps).

    A table whose config names a group and that ran on its own is taken into the group's
    tables (:func:`hashcdc.pipeline.evolution.joining.join_group`), with its siblings.
    """
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.groups.members import groups_of
    from hashcdc.pipeline.evolution.joining import join_group, own_states
    from hashcdc.pipeline.evolution.upgrade import upgrade_states

    project_dir = find_project_dir(args.project_dir)
    configs = load_table_configs(project_dir / "tables")
    names = set(args.select or [t.name for t in configs])
    groups = [g for g in groups_of(configs).values() if any(m.name in names for m in g.members)]
    names |= {m.name for g in groups for m in g.members}
    tables = [t for t in configs if t.name in names]
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    schema = profile_output(project_dir, args.target)["schema"]
    with table_locks(spark, sorted(names), configs):
        # A member's relations are the group's views once it joined: only a member that
        # still has tables of its own has any of an earlier layout to upgrade.
        own = {name for g in groups for name in own_states(spark, schema, g)}
        upgraded = [
            name
            for t in tables
            if t.group is None or t.name in own
            for name in upgrade_states(spark, schema, t)
        ]
        upgraded += [name for g in groups for name in join_group(spark, schema, g, views=True)]
    print(
        f"hashcdc upgrade: {len(upgraded)} table(s) upgraded"
        if upgraded
        else "hashcdc upgrade: every table is on the current layout; nothing to do"
    )
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    """Compact the states and dated tables (OPTIMIZE); drop the files of versions not kept."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.pipeline.evolution.upgrade import stored_tables
    from hashcdc.state.audit import state_dates_kept
    from hashcdc.state.maintenance import compact

    project_dir = find_project_dir(args.project_dir)
    configs = load_table_configs(project_dir / "tables")
    names = set(args.select or [t.name for t in configs])
    kept = state_dates_kept(project_dir)
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    schema = profile_output(project_dir, args.target)["schema"]
    # A group's tables are compacted once, for every member selected.
    stored = dict.fromkeys(
        name for t in configs if t.name in names for name in stored_tables(schema, t)
    )
    # ... and a run of any of the group's members writes them: the group is locked.
    with table_locks(spark, sorted(names), configs):
        for name in stored:
            print(f"{name}: compacting", flush=True)
            done = compact(spark, name, kept)
            print(done.summary() if done else f"{name}: not a Delta table yet", flush=True)
    return 0


def cmd_drop(args: argparse.Namespace) -> int:
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
    print("\n".join(f"  {shown(f)}" for f in files if f.exists()))
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
        with table_locks(spark, [table.name], tables):
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


def cmd_report(args: argparse.Namespace) -> int:
    """Write one self-contained HTML page with charts of every run in the audit."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.state.report import write_report

    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    default = service_levels.project_default(project_dir)
    out = write_report(
        spark, audit.audit_table(project_dir), tables, args.out, dt.date.today(), default
    )
    print(f"wrote {shown(out.resolve())}")
    return 0
