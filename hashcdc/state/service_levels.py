"""Service levels: how often each table's changes were visible within its objective.

A table's objective (:class:`hashcdc.config.ServiceLevel`: ``slo: {within: 5m, percent:
99}`` in its config, else the project's var ``hashcdc_slo``) is measured from the audit,
``cdc_runs``, which every run already writes; nothing is recorded for it alone:

- a **streamed** table (its micro-batches: ``command = 'run'`` rows with applied events):
  each micro-batch is one sample, its lag the time from the source commit of the
  batch's *oldest* new event (``earliest_event_at``; the freshest, ``latest_event_at``,
  for rows written before the audit had it) to the batch's end, when ``current`` shows
  it: the worst lag of any event in the batch;
- a **daily** table: each business date is one sample, its lag the time from the
  date's end (midnight after it in the table's time zone) to the end of its first
  successful run. A date run before it ended (a stream's close, an intraday run) has no
  lag.

Attainment over a window is the share of its samples within the objective; a window
without samples has none (the status line says so). ``hashcdc status --check`` fails when
a table's attainment over the last day is below its objective, or when its latest run
failed. Pure Python over the audit's rows: :func:`audit_samples` is the one query.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hashcdc.config import ServiceLevel, TableConfig
from hashcdc.dates import date_bounds_ms
from hashcdc.state.audit import duration_text, project_vars, recent_runs

# The windows `hashcdc status` reports, and the one `--check` holds a table to.
WINDOWS = (("1d", dt.timedelta(days=1)), ("7d", dt.timedelta(days=7)))
CHECKED_WINDOW = WINDOWS[0]
# The project var that gives every table without one its objective.
PROJECT_VAR = "hashcdc_slo"
SUCCEEDED = ("success", "warn")


@dataclass(frozen=True)
class Sample:
    """One measured lag of a table: a micro-batch's or a date's, ending at ``at``."""

    at: dt.datetime
    seconds: float


@dataclass(frozen=True)
class Attainment:
    """How a table did against its objective over one window."""

    window: str
    samples: int
    met: int
    worst_seconds: float | None

    @property
    def percent(self) -> float | None:
        """The share of samples within the objective, in percent (None: no sample)."""
        return 100.0 * self.met / self.samples if self.samples else None

    def holds(self, objective: ServiceLevel) -> bool:
        """Whether the objective held (a window without samples does not break it)."""
        percent = self.percent
        return percent is None or percent >= objective.percent


def project_default(project_dir: Path) -> Any:
    """The project's objective for every table without one (its var; None: none)."""
    return project_vars(project_dir).get(PROJECT_VAR)


def objective_of(table: TableConfig, project_default: Any) -> ServiceLevel | None:
    """The table's objective: its own ``slo``, else the project's var, else none."""
    if table.slo is not None:
        return table.slo
    if isinstance(project_default, dict) and project_default.get("within"):
        return ServiceLevel(
            within=str(project_default["within"]),
            percent=float(project_default.get("percent", 99.0)),
        )
    return None


def audit_samples(spark: Any, audit: str, since: dt.datetime) -> list[dict[str, Any]]:
    """The audit rows a service level reads, ended since ``since`` (one query).

    Times are naive, in this process's zone, as Spark hands timestamps to Python.
    """
    columns = ("table_name", "business_date", "command", "status", "ended_at",
               "latest_event_at", "earliest_event_at")  # fmt: skip
    rows = recent_runs(spark, audit, columns, since)
    return [{k: _naive(v) for k, v in row.items()} for row in rows]


def _naive(value: Any) -> Any:
    """A timestamp in this process's zone without one (Spark may hand either)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone().replace(tzinfo=None)
    return value


def table_samples(table: TableConfig, rows: Iterable[dict[str, Any]]) -> list[Sample]:
    """The table's samples among audit rows (see the module's text for what one is).

    A table with micro-batches in the rows is measured by them; otherwise by its dates.
    """
    own = [r for r in rows if r["table_name"] == table.name and r["status"] in SUCCEEDED]
    batches = [
        Sample(row["ended_at"], _seconds(row["ended_at"], oldest))
        for row in own
        if row["command"] == "run" and row["latest_event_at"] is not None
        for oldest in [row["earliest_event_at"] or row["latest_event_at"]]
    ]
    if batches:
        return sorted(batches, key=lambda s: s.at)
    first: dict[Any, dt.datetime] = {}
    for row in own:
        date = row["business_date"]
        if date not in first or row["ended_at"] < first[date]:
            first[date] = row["ended_at"]
    samples = []
    for date, ended in first.items():
        end_ms = date_bounds_ms(str(date), table.time_zone)[1]
        # As Spark hands timestamps to Python: naive, in this process's zone.
        date_end = dt.datetime.fromtimestamp(end_ms / 1000)
        samples.append(Sample(ended, _seconds(ended, date_end)))
    return sorted(samples, key=lambda s: s.at)


def _seconds(ended: dt.datetime, since: dt.datetime) -> float:
    """Seconds from ``since`` to ``ended`` (none when it came before: no lag)."""
    return max(0.0, (ended - since).total_seconds())


def attainment(
    objective: ServiceLevel, samples: Sequence[Sample], window: str, since: dt.datetime
) -> Attainment:
    """The objective's attainment over the samples that ended since ``since``."""
    inside = [s for s in samples if s.at >= since]
    return Attainment(
        window=window,
        samples=len(inside),
        met=sum(1 for s in inside if s.seconds <= objective.seconds),
        worst_seconds=max((s.seconds for s in inside), default=None),
    )


def attainments(
    objective: ServiceLevel, samples: Sequence[Sample], now: dt.datetime
) -> list[Attainment]:
    """The objective's attainment over each of :data:`WINDOWS` up to ``now``."""
    return [attainment(objective, samples, name, now - span) for name, span in WINDOWS]


def slo_text(objective: ServiceLevel | None, measured: Sequence[Attainment]) -> str:
    """``hashcdc status``'s service-level cell: each window's share and the worst lag."""
    if objective is None:
        return ""
    parts = []
    for window in measured:
        percent = window.percent
        if percent is None:
            parts.append(f"{window.window}: no samples")
            continue
        style = "green" if window.holds(objective) else "bold red"
        parts.append(f"{window.window}: [{style}]{percent:.1f}%[/]")
    worst = max((w.worst_seconds for w in measured if w.worst_seconds is not None), default=None)
    head = f"{objective.percent:g}% ≤ {objective.within}"
    tail = f"; worst {duration_text(worst)}" if worst is not None else ""
    return f"{head}: {', '.join(parts)}{tail}"


def breaches(
    tables: Sequence[TableConfig],
    project_default: Any,
    rows: Sequence[dict[str, Any]],
    latest: dict[str, dict[str, Any]],
    now: dt.datetime,
) -> list[str]:
    """Why ``hashcdc status --check`` fails: a line per breached objective or stopped table."""
    problems = []
    name, span = CHECKED_WINDOW
    for table in tables:
        if not table.enabled:
            continue
        run = latest.get(table.name)
        if run is not None and run["status"] not in SUCCEEDED:
            reason = next(iter((run.get("error_message") or "").splitlines()), "")
            problems.append(
                f"{table.name}: stopped: its latest run (business date {run['business_date']}) "
                f"ended {run['status']}{': ' + reason if reason else ''}; `hashcdc status` "
                "shows it, fix the cause and run the date again"
            )
        objective = objective_of(table, project_default)
        if objective is None:
            continue
        measured = attainment(objective, table_samples(table, rows), name, now - span)
        if not measured.holds(objective):
            problems.append(
                f"{table.name}: service level breached: {measured.percent:.1f}% of "
                f"{measured.samples} sample(s) within {objective.within} over the last "
                f"{name} (objective {objective.percent:g}%; worst "
                f"{duration_text(measured.worst_seconds or 0.0)})"
            )
    return problems
