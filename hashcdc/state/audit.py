"""What happened: the run audit table, the summary after a run, and ``hashcdc status``.

dbt writes the audit (the on-run-end hook ``hashcdc.record_cdc_runs``): one row per table,
business date and dbt invocation, failed runs included, appended and never overwritten.
This module only reads it, in the session that ran the dates.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from hashcdc.config import TableConfig

AUDIT_TABLE_VAR = "hashcdc_audit_table"
# The operation counts as the audit stores them, with their letters, in display order.
OPERATIONS = (
    ("I", "inserted"),
    ("U", "updated"),
    ("D", "deleted"),
    ("X", "not_supplied"),
    ("N", "unchanged"),
)
STATUS_STYLES = {"success": "green", "warn": "yellow", "error": "bold red", "skipped": "yellow"}
# A table whose run ended so did not apply the date: its later dates wait.
FAILED_STATUSES = ("error", "skipped")


def console() -> Console:
    """A console for tables: colour only on a terminal, wide enough for a log file."""
    if sys.stdout.isatty():
        return Console()
    # Wide enough for status's columns (service levels, failures) on one line each.
    return Console(width=200, no_color=True, highlight=False)


def audit_table(project_dir: Path) -> str:
    """The audit table's name: ``vars.hashcdc_audit_table`` of ``dbt_project.yml``."""
    return str(project_var(project_dir, AUDIT_TABLE_VAR))


def project_vars(project_dir: Path) -> dict[str, Any]:
    """The vars of the project's ``dbt_project.yml``."""
    project = yaml.safe_load((project_dir / "dbt_project.yml").read_text(encoding="utf-8"))
    return project.get("vars") or {}


def project_var(project_dir: Path, name: str) -> object:
    """A var of the project's ``dbt_project.yml``."""
    return project_vars(project_dir)[name]


# The var's earlier name, still read where a project sets it (the macro state_dates_kept
# reads it the same way for the runs).
EARLIER_DATES_KEPT_VAR = "hashcdc_state_snapshots_kept"
DATES_KEPT_VAR = "hashcdc_state_dates_kept"


def state_dates_kept(project_dir: Path) -> int:
    """Of how many of the latest dates a state keeps its versions (``dbt_project.yml``).

    A project that still sets the var's earlier name gets its value, and a warning.
    """
    found = project_vars(project_dir)
    if found.get(EARLIER_DATES_KEPT_VAR) is not None:
        print(
            f"hashcdc: the dbt var {EARLIER_DATES_KEPT_VAR} is now {DATES_KEPT_VAR}; its "
            f"value ({found[EARLIER_DATES_KEPT_VAR]}) is used: rename it in dbt_project.yml",
            file=sys.stderr,
        )
        return int(found[EARLIER_DATES_KEPT_VAR])
    return int(found[DATES_KEPT_VAR])


def _exists(spark: Any, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


def columns_of(spark: Any, table: str) -> set[str]:
    """The audit's columns (an older audit lacks those a later release added)."""
    return {field.name for field in spark.table(table).schema.fields}


def recent_runs(
    spark: Any, table: str, columns: Sequence[str], since: dt.datetime
) -> list[dict[str, Any]]:
    """Some columns of the audit's rows that ended since ``since`` (one query).

    A column an older audit lacks (added by a later release, on its first run) reads null.
    """
    if not _exists(spark, table):
        return []
    present = columns_of(spark, table)
    chosen = ", ".join(c if c in present else f"null as {c}" for c in columns)
    rows = spark.sql(
        f"select {chosen} from {table} where unix_timestamp(ended_at) >= {int(since.timestamp())}"
    ).collect()
    return [row.asDict() for row in rows]


def invocation_rows(spark: Any, table: str, invocation_ids: Sequence[str]) -> list[Any]:
    """The audit rows of some dbt invocations, by business date and table."""
    if not invocation_ids or not _exists(spark, table):
        return []
    ids = ", ".join(f"'{i}'" for i in invocation_ids)
    return spark.sql(
        f"select * from {table} where invocation_id in ({ids}) order by business_date, table_name"
    ).collect()


def _count(value: Any) -> str:
    return "" if value is None else f"{value:,}"


def summary_table(business_date: str, rows: Sequence[Any]) -> Table:
    """The summary of one business date: a line per table."""
    table = Table(title=f"business date {business_date}", title_justify="left")
    table.add_column("table")
    table.add_column("status")
    for heading in ("rows in", "rejects", *(letter for letter, _ in OPERATIONS), "state rows"):
        table.add_column(heading, justify="right")
    table.add_column("seconds", justify="right")
    for row in rows:
        table.add_row(
            row.table_name,
            f"[{STATUS_STYLES.get(row.status, '')}]{row.status}[/]",
            _count(row.rows_in),
            _count(row.rejects),
            *(_count(row[column]) for _, column in OPERATIONS),
            _count(row.state_rows_after),
            f"{row.seconds:.1f}",
        )
    return table


def print_summary(rows: Sequence[Any], out: Console | None = None) -> None:
    """Print one summary table per business date, then each failure's message."""
    out = out or console()
    for business_date in sorted({str(r.business_date) for r in rows}):
        out.print(
            summary_table(business_date, [r for r in rows if str(r.business_date) == business_date])
        )
    for row in rows:
        if row.error_message:
            out.print(f"{row.table_name} {row.business_date}: {row.error_message}", markup=False)


def latest_runs(spark: Any, table: str) -> dict[str, dict[str, Any]]:
    """Per table: its latest audit row, and the latest date it processed successfully."""
    if not _exists(spark, table):
        return {}
    rows = spark.sql(
        f"""
        with ranked as (
            select *, row_number() over (partition by table_name order by ended_at desc) as rank
            from {table}
        ),
        processed as (
            select table_name, max(business_date) as last_processed
            from {table}
            where status in ('success', 'warn')
            group by table_name
        )
        select ranked.*, processed.last_processed
        from ranked left join processed on ranked.table_name = processed.table_name
        where ranked.rank = 1
        """
    ).collect()
    return {row.table_name: row.asDict() for row in rows}


def duration_text(seconds: float) -> str:
    """Seconds in the unit that reads best: 12 s, 7.5 min, 3.2 h."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def lag_text(table: TableConfig, run: dict[str, Any], today: dt.date) -> str:
    """How far behind a table is.

    Snapshot tables: days from the last processed business date to ``today``. Feeds: the
    latest applied event's time against now (when the events carry one), and the
    events per second of the last run.
    """
    last = run.get("last_processed")
    if last is None:
        return "nothing processed"
    days = f"{(today - last).days} day(s)"
    if not table.is_feed:
        return days
    parts = [days]
    if run.get("latest_event_at") is not None:
        behind = (dt.datetime.now() - run["latest_event_at"]).total_seconds()
        parts.append(f"last event {duration_text(behind)} ago")
        if run.get("ended_at") is not None:
            # Source commit of the latest applied event -> its run's commit: a stream's lag.
            applied = (run["ended_at"] - run["latest_event_at"]).total_seconds()
            parts.append(f"applied {duration_text(max(0.0, applied))} after its commit")
    elif run.get("watermark"):
        parts.append(f"watermark {run['watermark']}")
    if run.get("rows_in") and run.get("seconds"):
        parts.append(f"{run['rows_in'] / run['seconds']:,.0f} events/s")
    return ", ".join(parts)


def status_table(
    tables: Sequence[TableConfig],
    runs: dict[str, dict[str, Any]],
    today: dt.date,
    levels: dict[str, str] | None = None,
    failures: dict[str, str] | None = None,
) -> Table:
    """``hashcdc status``: one line per configured table.

    ``levels``: each table's service-level cell (:mod:`hashcdc.state.service_levels`);
    the column is shown when some table has an objective. ``failures``: each table's
    failures cell (:mod:`hashcdc.state.failures`), shown when given.
    """
    levels = levels or {}
    out = Table()
    for heading in ("table", "enabled", "type", "last date", "last run", "at"):
        out.add_column(heading)
    out.add_column("I/U/D/X/N", justify="right")
    out.add_column("rejects", justify="right")
    out.add_column("lag")
    if levels:
        out.add_column("service level")
    if failures is not None:
        out.add_column("failures (7 days)")
    for table in tables:
        run = runs.get(table.name)
        enabled = "yes" if table.enabled else "[yellow]paused[/]"
        extra = [levels.get(table.name, "")] if levels else []
        if failures is not None:
            extra.append(failures.get(table.name, "none"))
        if run is None:
            out.add_row(
                table.name, enabled, table.extract_type, "", "never run", "", "", "", "", *extra
            )
            continue
        counts = "/".join(_count(run[column]) or "-" for _, column in OPERATIONS)
        out.add_row(
            table.name,
            enabled,
            table.extract_type,
            str(run["last_processed"] or ""),
            f"[{STATUS_STYLES.get(run['status'], '')}]{run['status']}[/] ({run['business_date']})",
            run["ended_at"].strftime("%Y-%m-%d %H:%M"),
            counts,
            _count(run["rejects"]),
            lag_text(table, run, today),
            *extra,
        )
    return out
