"""Failures counted: per table and date, what failed, what was retried, what stopped.

Read from what hashcdc records anyway, nothing kept for it alone but the stream's stops:

- the audit (``cdc_runs``), one row per run, failed runs included: a date's failed runs
  followed by another run of it were *retried*; a date whose latest run failed is
  *stopped*; its latest run's ``rejects`` are the rows it *quarantined*; ``retries`` are
  the transient failures (a broker away, a busy metastore, a concurrent commit) a
  stream's micro-batch rode through before it applied;
- the stream's stops (``.hashcdc/stream/<unit>.json``): a table the stream paused, after
  its retries ran out or at once for a failure that does not pass by itself (bad input),
  with the reason, kept even when the metastore was away; the next batch the stream
  applies for it clears it;
- the capture's lost connections (``failure_count`` in its offsets), which
  :mod:`hashcdc.capture.status` shows.

``hashcdc status`` shows each table's totals over the last seven days, ``hashcdc report``
charts them per date, and the metrics endpoint exports them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hashcdc.state.audit import FAILED_STATUSES, recent_runs

# Where a stream keeps its stops, one file per table or group it streams.
STREAM_STATE_DIR = Path(".hashcdc") / "stream"
# The span of runs `hashcdc status` counts.
STATUS_SPAN = dt.timedelta(days=7)


@dataclass(frozen=True)
class DateFailures:
    """One table-date's failures, from its runs in the audit."""

    table: str
    business_date: str
    failed: int
    stopped: bool
    retries: int
    quarantined: int

    @property
    def retried(self) -> int:
        """The failed runs another run of the date followed."""
        return self.failed - (1 if self.stopped else 0)


@dataclass(frozen=True)
class Stop:
    """A stream's pause of some tables: when, at which date, why, after how many retries."""

    tables: list[str]
    business_date: str | None
    reason: str
    at: str
    retries: int


def audit_failures(spark: Any, audit: str, since: dt.datetime) -> list[DateFailures]:
    """Each table-date's failures in the runs that ended since ``since`` (one query)."""
    columns = ("table_name", "business_date", "status", "ended_at", "rejects", "retries")
    return date_failures(recent_runs(spark, audit, columns, since))


def date_failures(runs: Iterable[dict[str, Any]]) -> list[DateFailures]:
    """Each table-date's failures from its runs (audit rows as dicts), by table and date."""
    by_date: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in runs:
        by_date.setdefault((run["table_name"], str(run["business_date"])), []).append(run)
    found = []
    for (table, date), own in sorted(by_date.items()):
        latest = max(own, key=lambda r: r["ended_at"])
        found.append(
            DateFailures(
                table=table,
                business_date=date,
                failed=sum(1 for r in own if r["status"] in FAILED_STATUSES),
                stopped=latest["status"] in FAILED_STATUSES,
                retries=sum(r.get("retries") or 0 for r in own),
                quarantined=latest["rejects"] or 0,
            )
        )
    return found


@dataclass(frozen=True)
class Totals:
    """A table's failures summed over dates."""

    failed: int = 0
    retried: int = 0
    stopped: int = 0
    retries: int = 0
    quarantined: int = 0

    def plus(self, date: DateFailures) -> Totals:
        """These totals with one more date's."""
        return Totals(
            self.failed + date.failed,
            self.retried + date.retried,
            self.stopped + int(date.stopped),
            self.retries + date.retries,
            self.quarantined + date.quarantined,
        )


def totals(dates: Iterable[DateFailures]) -> dict[str, Totals]:
    """Per table, its dates' failures summed."""
    found: dict[str, Totals] = {}
    for date in dates:
        found[date.table] = found.get(date.table, Totals()).plus(date)
    return found


def failures_text(total: Totals | None, stop: Stop | None) -> str:
    """``hashcdc status``'s failures cell: the counts that are not zero, and a stream's stop."""
    parts = []
    if total is not None:
        if total.failed:
            parts.append(
                f"{total.failed} failed ({total.retried} retried, {total.stopped} stopped)"
            )
        if total.retries:
            parts.append(f"{total.retries} retries")
        if total.quarantined:
            parts.append(f"{total.quarantined:,} quarantined")
    if stop is not None:
        parts.append(f"[bold red]stream paused[/] {stop.at[:16]}: {stop.reason}")
    return "; ".join(parts) or "none"


def _stop_file(project_dir: Path, unit: str) -> Path:
    return project_dir / STREAM_STATE_DIR / f"{unit}.json"


def record_stop(project_dir: Path, unit: str, stop: Stop) -> None:
    """Keep a stream's pause of a unit's tables (a file: the metastore may be away)."""
    path = _stop_file(project_dir, unit)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    scratch.write_text(json.dumps(asdict(stop), indent=2) + "\n", encoding="utf-8")
    scratch.replace(path)


def clear_stop(project_dir: Path, unit: str) -> None:
    """Forget a unit's pause: the stream applied a batch of it again."""
    _stop_file(project_dir, unit).unlink(missing_ok=True)


def stream_stops(project_dir: Path) -> dict[str, Stop]:
    """Per table, the stream's pause of it (none when the stream goes on with it)."""
    folder = project_dir / STREAM_STATE_DIR
    found: dict[str, Stop] = {}
    for path in sorted(folder.glob("*.json")) if folder.exists() else []:
        stop = Stop(**json.loads(path.read_text(encoding="utf-8")))
        found.update(dict.fromkeys(stop.tables, stop))
    return found


def stopped_lines(stops: dict[str, Stop], names: Sequence[str]) -> list[str]:
    """``hashcdc status --check``'s line for each of ``names`` the stream paused."""
    return [
        f"{name}: the stream paused it at {stop.at[:19]} (business date "
        f"{stop.business_date or 'none yet'}, after {stop.retries} retries): {stop.reason}; "
        "fix the cause and start the stream again"
        for name in names
        if (stop := stops.get(name)) is not None
    ]
