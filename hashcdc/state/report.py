"""``hashcdc report``: one self-contained HTML page of charts drawn from the run audit.

The page embeds plotly.js once, so it opens without a network (a mail attachment, a
file share). Each chart is a ``<div id="chart-...">``; the charts use the latest run of
each table and business date.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hashcdc.config import TableConfig
from hashcdc.state import audit, failures, service_levels

OPERATION_COLOURS = {"I": "#2e7d32", "U": "#1565c0", "D": "#c62828", "X": "#ef6c00"}
CHART_IDS = (
    "chart-operations",
    "chart-rejects",
    "chart-durations",
    "chart-lag",
    "chart-feed-lag",
    "chart-service-levels",
    "chart-failures",
)
FAILURE_COLOURS = {"retried": "#ef6c00", "stopped": "#c62828", "retries": "#6a1b9a"}


def _latest_per_date(rows: Sequence[Any]) -> dict[str, list[Any]]:
    """Per table, its latest run of each business date, in date order."""
    latest: dict[tuple[str, Any], Any] = {}
    for row in sorted(rows, key=lambda r: r.ended_at):
        latest[(row.table_name, row.business_date)] = row
    by_table: dict[str, list[Any]] = {}
    for (table, _), row in sorted(latest.items(), key=lambda item: item[0]):
        by_table.setdefault(table, []).append(row)
    return by_table


def _per_table_figure(by_table: dict[str, list[Any]], title: str) -> go.Figure:
    # Room for each panel's title, however many tables there are (plotly caps the gap).
    gap = min(0.12, 0.6 / max(len(by_table) - 1, 1))
    figure = make_subplots(
        rows=len(by_table), cols=1, subplot_titles=list(by_table), vertical_spacing=gap
    )
    figure.update_layout(title=title, barmode="stack", height=220 + 200 * len(by_table))
    return figure


def operations_chart(by_table: dict[str, list[Any]]) -> go.Figure:
    """Stacked I/U/D/X rows per business date, one panel per table."""
    figure = _per_table_figure(by_table, "Operations per business date")
    for panel, runs in enumerate(by_table.values(), start=1):
        dates = [str(r.business_date) for r in runs]
        for letter, column in audit.OPERATIONS:
            if letter not in OPERATION_COLOURS:
                continue  # N (unchanged) would dwarf the changes
            figure.add_trace(
                go.Bar(
                    x=dates,
                    y=[r[column] or 0 for r in runs],
                    name=letter,
                    legendgroup=letter,
                    showlegend=panel == 1,
                    marker_color=OPERATION_COLOURS[letter],
                ),
                row=panel,
                col=1,
            )
    return figure


def rejects_chart(by_table: dict[str, list[Any]]) -> go.Figure:
    """Rejected rows per business date, a line per table."""
    figure = go.Figure(layout={"title": "Rejected rows per business date"})
    for table, runs in by_table.items():
        figure.add_trace(
            go.Scatter(
                x=[str(r.business_date) for r in runs],
                y=[r.rejects or 0 for r in runs],
                mode="lines+markers",
                name=table,
            )
        )
    return figure


def durations_chart(by_table: dict[str, list[Any]]) -> go.Figure:
    """Seconds per model of each business date's run, stacked, one panel per table."""
    figure = _per_table_figure(by_table, "Seconds per model (latest run of each date)")
    for panel, runs in enumerate(by_table.values(), start=1):
        models = sorted({model for r in runs for model in (r.model_seconds or {})})
        for model in models:
            figure.add_trace(
                go.Bar(
                    x=[str(r.business_date) for r in runs],
                    y=[(r.model_seconds or {}).get(model, 0) for r in runs],
                    name=model,
                ),
                row=panel,
                col=1,
            )
    return figure


def lag_chart(by_table: dict[str, list[Any]], today: dt.date) -> go.Figure:
    """Days from each table's last processed business date to today."""
    figure = go.Figure(layout={"title": f"Lag on {today}: days since the last processed date"})
    names, days = [], []
    for table, runs in by_table.items():
        processed = [r.business_date for r in runs if r.status in ("success", "warn")]
        if processed:
            names.append(table)
            days.append((today - max(processed)).days)
    figure.add_trace(go.Bar(x=names, y=days, marker_color="#6a1b9a", name="lag (days)"))
    return figure


def feed_lag_chart(rows: Sequence[Any]) -> go.Figure:
    """Per change feed, every run's lag over time, in seconds.

    The lag of a run: its latest applied event's source commit to the run's end (a
    streamed table: a point per micro-batch).
    """
    figure = go.Figure(
        layout={
            "title": "Change feeds: seconds from the latest applied event's commit to its run",
            "yaxis": {"type": "log", "title": "seconds"},
        }
    )
    by_table: dict[str, list[Any]] = {}
    for row in sorted(rows, key=lambda r: r.ended_at):
        if row.latest_event_at is not None and row.status in ("success", "warn"):
            by_table.setdefault(row.table_name, []).append(row)
    for table, runs in by_table.items():
        figure.add_trace(
            go.Scatter(
                x=[r.ended_at for r in runs],
                y=[max((r.ended_at - r.latest_event_at).total_seconds(), 0.1) for r in runs],
                mode="lines+markers",
                name=table,
            )
        )
    return figure


def service_level_chart(
    rows: Sequence[Any], tables: Sequence[TableConfig], default: Any = None
) -> go.Figure:
    """Per table with an objective, each sample's lag over time beside its ``within``.

    A sample is a micro-batch (its oldest event's commit to its end) or a date (its end
    to its first commit): :mod:`hashcdc.state.service_levels`.
    """
    records = [dict(row) if isinstance(row, dict) else row.asDict() for row in rows]
    for record in records:
        record.setdefault("earliest_event_at", None)
        record.setdefault("command", "build")
    figure = go.Figure(
        layout={
            "title": "Service levels: each sample's lag against the table's objective (dashed)",
            "yaxis": {"type": "log", "title": "seconds"},
        }
    )
    for table in tables:
        objective = service_levels.objective_of(table, default)
        samples = service_levels.table_samples(table, records) if objective else []
        if objective is None or not samples:
            continue
        figure.add_trace(
            go.Scatter(
                x=[s.at for s in samples],
                y=[max(s.seconds, 0.1) for s in samples],
                mode="markers",
                name=table.name,
            )
        )
        figure.add_trace(
            go.Scatter(
                x=[samples[0].at, samples[-1].at],
                y=[objective.seconds, objective.seconds],
                mode="lines",
                line={"dash": "dash"},
                name=f"{table.name}: {objective.percent:g}% within {objective.within}",
            )
        )
    return figure


def failures_chart(rows: Sequence[Any]) -> go.Figure:
    """Per table and business date: failed runs retried, dates stopped, transient retries.

    From every run in the audit (:mod:`hashcdc.state.failures`); the rows quarantined
    are the rejects chart's.
    """
    records = [dict(row) if isinstance(row, dict) else row.asDict() for row in rows]
    dates = failures.date_failures(records)
    figure = go.Figure(
        layout={
            "title": "Failures per business date: runs retried, dates stopped, retries",
            "barmode": "group",
        }  # fmt: skip
    )
    for what, colour in FAILURE_COLOURS.items():
        counted = [d for d in dates if _failure_count(d, what)]
        if counted:
            figure.add_trace(
                go.Bar(
                    x=[[d.table for d in counted], [d.business_date for d in counted]],
                    y=[_failure_count(d, what) for d in counted],
                    name=what,
                    marker_color=colour,
                )
            )
    return figure


def _failure_count(date: failures.DateFailures, what: str) -> int:
    return {"retried": date.retried, "stopped": int(date.stopped), "retries": date.retries}[what]


def _status_rows(by_table: dict[str, list[Any]], tables: Sequence[TableConfig]) -> str:
    configs = {t.name: t for t in tables}
    cells = []
    for table, runs in by_table.items():
        last = runs[-1]
        config = configs.get(table)
        enabled = "removed" if config is None else ("yes" if config.enabled else "paused")
        counts = " ".join(
            f"{letter}={last[column]}"
            for letter, column in audit.OPERATIONS
            if last[column] is not None
        )
        rejects = "" if last.rejects is None else last.rejects
        values = (table, enabled, str(last.business_date), last.status, counts, rejects)
        cells.append("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in values) + "</tr>")
    return "\n".join(cells)


def render_report(
    rows: Sequence[Any], tables: Sequence[TableConfig], today: dt.date, default: Any = None
) -> str:
    """The report page for some audit rows (``default``: the project's objective)."""
    by_table = _latest_per_date(rows)
    if not by_table:
        body = "<p>No run is recorded yet: run a business date first (`hashcdc run`).</p>"
    else:
        figures = (
            operations_chart(by_table),
            rejects_chart(by_table),
            durations_chart(by_table),
            lag_chart(by_table, today),
        )
        for figure in figures:
            # Business dates are categories: no hours between them, no gaps for days not run.
            figure.update_xaxes(type="category")
        # Over time, not by date: every run of a streamed table is a point.
        figures = (
            *figures,
            feed_lag_chart(rows),
            service_level_chart(rows, tables, default),
            failures_chart(rows),
        )
        charts = [
            figure.to_html(full_html=False, include_plotlyjs=index == 0, div_id=chart_id)
            for index, (figure, chart_id) in enumerate(zip(figures, CHART_IDS, strict=True))
        ]
        body = (
            "<table><tr><th>table</th><th>enabled</th><th>latest run</th><th>status</th>"
            "<th>operations</th><th>rejects</th></tr>\n"
            + _status_rows(by_table, tables)
            + "</table>\n"
            + "\n".join(charts)
        )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>hashcdc report</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 10px;"
        "text-align:left}</style></head>\n"
        f"<body><h1>hashcdc report, {today}</h1>\n{body}\n</body></html>\n"
    )


def write_report(
    spark: Any,
    audit_table: str,
    tables: Sequence[TableConfig],
    out: Path,
    today: dt.date,
    default: Any = None,
) -> Path:
    """Read the whole audit and write the report page to ``out``."""
    rows = spark.table(audit_table).collect() if spark.catalog.tableExists(audit_table) else []
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(rows, tables, today, default), encoding="utf-8")
    return out
