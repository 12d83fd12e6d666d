"""Service levels from audit rows, without Spark: samples, attainment, what --check says."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hashcdc.config import ServiceLevel, parse_table_config
from hashcdc.state import service_levels as levels

NOW = dt.datetime(2026, 12, 6, 12, 0)


def _table(name: str, **extra: Any) -> Any:
    raw = {
        "name": name,
        "extract_type": "full",
        "source": f"landing/{name}/{{business_date}}",
        "columns": [{"name": "id", "type": "int", "key": True}],
        **extra,
    }
    config, problems = parse_table_config(raw, f"tables/{name}.yml")
    assert config is not None, problems
    return config


def _row(table: str, ended: dt.datetime, **values: Any) -> dict[str, Any]:
    return {
        "table_name": table,
        "business_date": values.pop("business_date", ended.date()),
        "command": values.pop("command", "run"),
        "status": values.pop("status", "success"),
        "ended_at": ended,
        "latest_event_at": values.pop("latest_event_at", None),
        "earliest_event_at": values.pop("earliest_event_at", None),
        "error_message": values.pop("error_message", None),
    }


def test_a_micro_batch_is_measured_by_its_oldest_event() -> None:
    table = _table("orders", slo={"within": "1m", "percent": 75})
    minutes = dt.timedelta(minutes=1)
    rows = [
        # Oldest event 30 s before the batch ended: within the minute.
        _row("orders", NOW - 50 * minutes, latest_event_at=NOW - 50 * minutes,
             earliest_event_at=NOW - 50 * minutes - dt.timedelta(seconds=30)),
        # Freshest event 10 s before, but its oldest 3 minutes: the batch misses.
        _row("orders", NOW - 40 * minutes, latest_event_at=NOW - 40 * minutes
             - dt.timedelta(seconds=10), earliest_event_at=NOW - 43 * minutes),
        # Written before the audit had earliest_event_at: its latest event is taken.
        _row("orders", NOW - 30 * minutes, latest_event_at=NOW - 30 * minutes
             - dt.timedelta(seconds=5)),
        # A batch that applied nothing new, a failed one and another table's: no sample.
        _row("orders", NOW - 20 * minutes),
        _row("orders", NOW - 10 * minutes, status="error", latest_event_at=NOW - 60 * minutes),
        _row("pets", NOW - 10 * minutes, latest_event_at=NOW - 60 * minutes),
        # A stream's close (a whole-date build) is not one of its batches.
        _row("orders", NOW - 5 * minutes, command="build", latest_event_at=NOW - 9 * minutes),
    ]  # fmt: skip
    samples = levels.table_samples(table, rows)
    assert [round(s.seconds) for s in samples] == [30, 180, 5]
    [day, week] = levels.attainments(table.slo, samples, NOW)
    assert (day.samples, day.met, day.worst_seconds) == (3, 2, 180.0)
    assert round(day.percent, 1) == 66.7 and not day.holds(table.slo)
    assert week.samples == 3
    text = levels.slo_text(table.slo, [day, week])
    assert text.startswith("75% ≤ 1m: 1d: [bold red]66.7%[/]") and text.endswith("worst 3.0 min")


def test_a_daily_table_is_measured_from_its_dates_end_to_its_first_commit() -> None:
    table = _table("ledger", slo={"within": "2h", "percent": 50})
    rows = [
        # 2026-12-04 ended at midnight UTC; committed at 01:30, then rerun at 09:00.
        _row("ledger", dt.datetime(2026, 12, 5, 1, 30), command="build",
             business_date=dt.date(2026, 12, 4)),
        _row("ledger", dt.datetime(2026, 12, 5, 9, 0), command="run",
             business_date=dt.date(2026, 12, 4)),
        # 2026-12-05 committed at 03:00: three hours after its end.
        _row("ledger", dt.datetime(2026, 12, 6, 3, 0), command="build",
             business_date=dt.date(2026, 12, 5)),
    ]  # fmt: skip
    assert [s.seconds / 3600 for s in levels.table_samples(table, rows)] == [1.5, 3.0]
    week = levels.attainments(table.slo, levels.table_samples(table, rows), NOW)[1]
    assert (week.samples, week.met, week.percent) == (2, 1, 50.0)
    assert week.holds(table.slo)


def test_the_project_default_and_what_check_names() -> None:
    own = _table("orders", slo={"within": "1m"})
    defaulted = _table("pets")
    stopped = _table("notes")
    assert own.slo == ServiceLevel(within="1m", percent=99.0)
    default = {"within": "5m", "percent": 90}
    assert levels.objective_of(defaulted, default) == ServiceLevel(within="5m", percent=90.0)
    assert levels.objective_of(defaulted, None) is None
    rows = [
        _row("orders", NOW - dt.timedelta(hours=2), latest_event_at=NOW - dt.timedelta(hours=3)),
        _row("pets", NOW - dt.timedelta(hours=2), latest_event_at=NOW - dt.timedelta(hours=2)),
    ]
    latest = {
        "notes": _row("notes", NOW, status="error", error_message="no extract\nmore")
        | {"business_date": dt.date(2026, 12, 5)},
    }
    problems = levels.breaches([own, defaulted, stopped], default, rows, latest, NOW)
    assert problems == [
        "orders: service level breached: 0.0% of 1 sample(s) within 1m over the last 1d "
        "(objective 99%; worst 60.0 min)",
        "notes: stopped: its latest run (business date 2026-12-05) ended error: no extract; "
        "`hashcdc status` shows it, fix the cause and run the date again",
    ]


def test_the_metrics_give_each_tables_latest_lag_and_its_attainment_per_window() -> None:
    from prometheus_client.core import Metric

    from hashcdc.state.metrics import level_metrics

    orders = _table("orders", slo={"within": "1m", "percent": 90})
    plain = _table("plain")
    minutes = dt.timedelta(minutes=1)
    rows = [
        _row("orders", NOW - 50 * minutes, latest_event_at=NOW - 50 * minutes,
             earliest_event_at=NOW - 52 * minutes),
        _row("orders", NOW - 10 * minutes, latest_event_at=NOW - 10 * minutes,
             earliest_event_at=NOW - 10 * minutes - dt.timedelta(seconds=20)),
    ]  # fmt: skip
    metrics: list[Metric] = list(level_metrics([orders, plain], rows, None, NOW))
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for m in metrics for s in m.samples
    }
    assert samples == {
        ("hashcdc_lag_seconds", (("table", "orders"),)): 20.0,
        ("hashcdc_slo_within_seconds", (("table", "orders"),)): 60.0,
        ("hashcdc_slo_objective_ratio", (("table", "orders"),)): 0.9,
        ("hashcdc_slo_attainment_ratio", (("table", "orders"), ("window", "1d"))): 0.5,
        ("hashcdc_slo_attainment_ratio", (("table", "orders"), ("window", "7d"))): 0.5,
    }
