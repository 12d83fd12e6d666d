"""Commands that read live databases: extract (a table's snapshot as a date's extract)."""

from __future__ import annotations

import argparse
import os

from hashcdc.config import load_table_configs
from hashcdc.errors import HashcdcError
from hashcdc.project import find_project_dir, spark_session


def cmd_extract(args: argparse.Namespace) -> int:
    """Land each named table's database snapshot as the extract of a business date."""
    from hashcdc.capture.snapshot import land_snapshot

    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    tables = {table.name: table for table in load_table_configs(project_dir / "tables")}
    unknown = [name for name in args.tables if name not in tables]
    if unknown:
        raise HashcdcError(
            f"no table config for {', '.join(unknown)} in tables/ (tables: "
            f"{', '.join(sorted(tables))})"
        )
    spark = spark_session(project_dir, args.target)
    for name in args.tables:
        landed = land_snapshot(spark, tables[name], args.date, replace=args.replace)
        print(
            f"hashcdc: table '{name}': landed {landed.rows} rows for {args.date} at "
            f"{landed.path} in {landed.seconds:.1f} s; `hashcdc run --date {args.date} "
            f"--select {name}` processes them",
            flush=True,
        )
    return 0
