"""Commands that read live databases: extract (a snapshot as a date's extract), capture."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path

from hashcdc.config import TableConfig, load_table_configs
from hashcdc.errors import HashcdcError
from hashcdc.runtime.project import find_project_dir, spark_session


def cmd_extract(args: argparse.Namespace) -> int:
    """Land each named table's database snapshot as the extract of a business date."""
    # deferred: Spark's modules load only for the commands that use them
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


# Where each capture (one replication slot) keeps its offsets and progress.
CAPTURE_STATE_DIR = Path(".hashcdc") / "capture"


def _until(text: str | None) -> tuple[int | None, dt.datetime | None]:
    """``--until``: a log position (``16/B374D848``) or a time (ISO; UTC without offset)."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.capture.pgoutput import lsn_number

    if text is None:
        return None, None
    if "/" in text:
        try:
            return lsn_number(text), None
        except ValueError:
            pass
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise HashcdcError(
            f"--until {text}: give a log position (16/B374D848) or an ISO time "
            "(2024-03-02T00:00:00)"
        ) from None
    return None, moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _pause_or_resume(state_dir: Path, tables: list[TableConfig], pause: bool) -> int:
    """Write the tables' pause (or resume) where their capture takes it up."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.capture.landing import CONTROL_SUFFIX, held_folder, set_paused

    for table in tables:
        slot = table.source.database.capture_slot  # type: ignore[union-attr]
        set_paused(state_dir / f"{slot}{CONTROL_SUFFIX}", [table.name], pause)
        if pause:
            print(
                f"hashcdc: table '{table.name}' paused: capture {slot} holds its events in "
                f"{held_folder(state_dir, slot, table.name)} from its next transaction (a "
                f"running capture takes this up at its next roll); `hashcdc capture --resume "
                f"{table.name}` releases them into the business date it resumes on",
                flush=True,
            )
        else:
            print(
                f"hashcdc: table '{table.name}' resumed: capture {slot} releases its held "
                "events into the landing folder of the business date it resumes on (a "
                "running capture at its next roll, else when it starts)",
                flush=True,
            )
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    """Stream the selected tables' changes from their database's log (or check it)."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.capture.base import CaptureOptions
    from hashcdc.capture.group import capture_group
    from hashcdc.capture.sources import source_for

    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    configs = load_table_configs(project_dir / "tables")
    captured = [t for t in configs if t.source.database and t.extract_type == "changes"]
    named = args.pause or args.resume or args.select
    if named:
        by_name = {table.name: table for table in captured}
        unknown = [name for name in named if name not in by_name]
        if unknown:
            raise HashcdcError(
                f"not captured tables: {', '.join(unknown)} (captured: extract_type changes "
                f"with source.database: {', '.join(sorted(by_name)) or 'none'})"
            )
        captured = [by_name[name] for name in named]
    if args.pause or args.resume:
        return _pause_or_resume(project_dir / CAPTURE_STATE_DIR, captured, bool(args.pause))
    if not captured:
        raise HashcdcError(
            "no table to capture: give a table extract_type: changes and a source.database "
            "block (docs/capture.md)"
        )
    group = capture_group(captured)
    if args.check:
        lines = source_for(group.database.kind).check(group)
        for line in lines:
            print(line, flush=True)
        return 2 if any(line.startswith("problem:") for line in lines) else 0
    until_lsn, until_time = _until(args.until)
    options = CaptureOptions(
        state_dir=project_dir / CAPTURE_STATE_DIR,
        once=args.once,
        until_position=until_lsn,
        until_time=until_time,
        roll_bytes=int(args.roll_mib * 2**20),
        roll_seconds=args.roll_seconds,
        retry_seconds=args.retry_seconds,
        business_date=args.date,
    )
    # deferred: the capture's modules (and its database's driver) load only for it
    from hashcdc.capture.status import CaptureCollector
    from hashcdc.state.metrics import served

    collector = CaptureCollector(lambda: captured, options.state_dir)
    with served(args.metrics_port, [collector], "--metrics-port"):
        if group.database.kind == "mariadb":
            # deferred: Spark's modules load only for the commands that use them
            from hashcdc.capture.mariadb import MariaDBCapture

            return MariaDBCapture(group, options, project_dir).run()
        # deferred: Spark's modules load only for the commands that use them
        from hashcdc.capture.postgresql import PostgresCapture

        return PostgresCapture(group, options, project_dir).run()
