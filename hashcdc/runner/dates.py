"""The date loop: ``dbt build`` of each business date in turn, in one Spark session.

A table that fails on a date stops there and skips its later dates (its dates apply in
order; a member of a table group is held back from its group's later dates); the other
tables carry on. ``hashcdc run``, ``replay``, the demo and the bench
drive it; each date's summary is read from the audit table (:mod:`hashcdc.state.audit`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hashcdc.config import TableConfig, load_table_configs
from hashcdc.groups import outcomes
from hashcdc.groups.members import stages_of
from hashcdc.runner.invocation import invoke_and_audit
from hashcdc.runner.standing import (
    excluded,
    fingerprints,
    record_built,
    seed_fingerprints,
    standing,
)
from hashcdc.runtime.project import table_selector
from hashcdc.state import audit


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
    configs: Sequence[TableConfig] = (),
) -> Stops:
    """``dbt build`` each business date in turn, printing a header and the date's summary.

    A table that fails on a date is not built on the later dates (its dates apply in
    order); the other tables carry on. ``after_build`` gets each build's dbt result and
    seconds (``run --profile``); ``configs``: the project's tables, when the command has
    read them already. Returns where tables stopped.
    """
    out = audit.console()
    stops = Stops()
    tables = configs or load_table_configs(project_dir / "tables")
    stages = stages_of(tables)
    views = fingerprints(tables)
    wanted = views | seed_fingerprints(project_dir, tables)
    stand = standing(spark, project_dir, wanted)
    for run in runs:
        if stops.everything:
            break
        selected = [t for t in run.tables if t not in stops.at]
        if run.tables and not selected:
            continue
        if stops.at and not run.tables:
            active = sorted(t.name for t in tables if t.enabled and t.name not in stops.at)
            selected = active
        out.rule(f"business date {run.business_date}")
        started = time.perf_counter()
        selector = table_selector(selected, stages)
        if selector and run.also_select:
            selector += run.also_select
        args = [*run.extra, *selector, *excluded(stand, views), "--log-path", str(log_dir)]
        # A member of a group that failed a date is held back from the later ones, and one
        # not selected from its selected siblings' date, as a table of its own is not run.
        with outcomes.holding([*stops.at, *siblings_not_selected(tables, selected)]):
            done = invoke_and_audit(spark, project_dir, "build", args, run.business_date)
        if len(stand) != len(wanted) and record_built(project_dir, wanted, done.result):
            stand = standing(spark, project_dir, wanted)
        if after_build:
            after_build(done.result, time.perf_counter() - started)
        rows = done.rows
        if rows:
            audit.print_summary(rows, out)
        else:
            out.print(f"no table of {run.business_date} reached its state model (dbt output above)")
        failed = [row.table_name for row in rows if row.status in audit.FAILED_STATUSES]
        for name in failed:
            stops.at.setdefault(name, run.business_date)
        if not done.success and not failed:
            stops.everything = run.business_date
    return stops


def siblings_not_selected(tables: Sequence[TableConfig], selected: Sequence[str]) -> list[str]:
    """The members of the selected tables' groups that are not selected (none: all are)."""
    chosen = set(selected)
    groups = {t.group for t in tables if t.name in chosen and t.group is not None}
    return sorted(t.name for t in tables if t.group in groups and t.name not in chosen)
