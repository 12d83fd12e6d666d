"""Commands about a project's configs and models: schema, validate, check, init, docs, generate.

And the two that come before any project: ``new`` and ``setup``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hashcdc.cli.daily import shown
from hashcdc.codegen import generate
from hashcdc.config import SCHEMA, TableConfig, load_table_configs
from hashcdc.errors import HashcdcError, InputDataError
from hashcdc.runtime.project import (
    dbt_args,
    find_project_dir,
    invoke_dbt,
    spark_session,
)


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema of tables/<name>.yml (for editors and other tools).

    Built from the registries, so a type or input format registered at run time shows.
    """
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.registries import schema_with_registries

    del args
    print(json.dumps(schema_with_registries(SCHEMA), indent=2, ensure_ascii=False))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check every table config, listing each problem with its file and field."""
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


def cmd_check(args: argparse.Namespace) -> int:
    """Everything a run needs, checked before it: configs, models and the dates' extracts."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.pipeline.stage import checked_extract
    from hashcdc.runtime.project import files_session

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


def cmd_new(args: argparse.Namespace) -> int:
    """Create a project in PATH: its folders, profiles, vars and packages.yml; dbt deps."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.runtime.scaffold import new_project

    new_project(args.path, args.package, args.name)
    print(f"created the hashcdc project {shown(args.path)} (hashcdc's macros and tests from "
          "packages.yml, installed by dbt deps)")  # fmt: skip
    print(
        f"next: cd {shown(args.path)}; `hashcdc init NAME --sample FILE` (or write "
        "tables/NAME.yml), `hashcdc generate`, then `hashcdc run --date YYYY-MM-DD`; "
        "or `hashcdc demo`"
    )
    return 0


def cmd_setup(args: argparse.Namespace) -> int:
    """Fetch the JVM packages into hashcdc's jar folder and build the driver's class archive."""
    # deferred: the jar list and the archive's build load only for this command
    from hashcdc.runtime import class_archive, jars

    wanted = jars.ALL_JARS if args.bench else jars.RUNTIME_JARS
    fetched = jars.fetch(wanted, progress=True)
    print(f"JVM packages in {jars.jars_dir()}: {len(fetched)} fetched, "
          f"{len(wanted) - len(fetched)} already there")  # fmt: skip
    if args.bench and (broker := jars.fetch_broker()):
        print(f"fetched the Kafka broker into {broker}")
    if not args.no_class_archive:
        archive = class_archive.archive_path()
        if archive.is_file():
            print(f"class archive up to date: {archive}")
        else:
            print("building the driver's class archive (a run of two small dates, a minute "
                  "or two; Spark then starts in about half the time)", flush=True)  # fmt: skip
            print(f"wrote {class_archive.ensure()}")
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """Write tables/NAME.yml from a sample extract; the user marks the keys."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.codegen.sample import table_yaml_from_sample

    project_dir = find_project_dir(args.project_dir)
    target = project_dir / "tables" / f"{args.name}.yml"
    if target.exists() and not args.force:
        raise HashcdcError(f"{shown(target)} exists; choose another name or add --force")
    text = table_yaml_from_sample(project_dir, args.name, args.sample, args.delimiter)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {shown(target)} from {args.sample}")
    print(
        "next: mark the key column(s) with `key: true`, check the types and source.path, "
        f"then `hashcdc generate` and `hashcdc check --date YYYY-MM-DD --select {args.name}`"
    )
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    """Generate dbt docs as one page (target/static_index.html); --serve serves them."""
    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    spark_session(project_dir, args.target)
    target = ["--target", args.target] if args.target else []
    generate_args = ["--static", *target]
    if not invoke_dbt(dbt_args("docs generate", project_dir, generate_args)).success:
        raise HashcdcError("dbt docs generate failed (see the dbt output above)")
    page = project_dir / "target" / "static_index.html"
    print(f"docs: {shown(page)} (one file: open it in a browser, or copy it anywhere)")
    if args.serve:
        print(f"serving target/ on http://127.0.0.1:{args.port} (Ctrl-C stops)")
        invoke_dbt(dbt_args("docs serve", project_dir, ["--port", str(args.port), "--no-browser"]))
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    """Write the thin model files from tables/ (``--check``: fail when they drift)."""
    project_dir = find_project_dir(args.project_dir)
    tables = load_table_configs(project_dir / "tables")
    if args.check:
        return _report_stale_models(project_dir, tables)
    changed = generate.write(project_dir, tables)
    for path in changed:
        print(f"wrote {path}")
    print(f"{len(changed)} file(s) changed for {len(tables)} table(s)")
    return 0
