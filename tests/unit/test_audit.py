"""The run summary and status lines from audit rows (pure Python: no Spark)."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from hashcdc.config import parse_table_config
from hashcdc.state import audit

COLUMNS = [{"name": "id", "type": "int", "key": True}]


def table(name: str, **extra: Any) -> Any:
    raw = {
        "name": name,
        "extract_type": "full",
        "source": f"landing/{name}/{{business_date}}",
        "columns": COLUMNS,
        **extra,
    }
    config, problems = parse_table_config(raw, f"tables/{name}.yml")
    assert not problems, problems
    return config


def feed_table() -> Any:
    return table(
        "events",
        extract_type="changes",
        changes={"sequence_by": ["source.lsn"]},
        source={"path": "landing/events/{business_date}", "format": "debezium"},
    )


class Row(dict):
    """An audit row as Spark returns it: fields by name and by index."""

    def __getattr__(self, name: str) -> Any:
        return self[name]


def run(**values: Any) -> Row:
    base = dict.fromkeys(
        ["rows_in", "rejects", "inserted", "updated", "deleted", "not_supplied", "unchanged"], 0
    )
    return Row(
        base
        | {
            "table_name": "t",
            "business_date": dt.date(2024, 3, 2),
            "status": "success",
            "state_rows_after": 3,
            "seconds": 12.34,
            "error_message": None,
            "latest_event_at": None,
        }
        | values
    )


def rendered(*renderables: Any) -> str:
    out = io.StringIO()
    console = Console(file=out, width=160, no_color=True)
    for item in renderables:
        console.print(item)
    return out.getvalue()


def test_the_summary_has_a_table_per_date_and_the_messages_after_them() -> None:
    rows = [
        run(table_name="a", rows_in=1200, inserted=7),
        run(table_name="b", status="error", error_message="stg_b: no extract", rows_in=None),
        run(table_name="a", business_date=dt.date(2024, 3, 3)),
    ]
    out = io.StringIO()
    audit.print_summary(rows, Console(file=out, width=160, no_color=True))
    text = out.getvalue()
    assert text.index("business date 2024-03-02") < text.index("business date 2024-03-03")
    assert "1,200" in text and "12.3" in text
    assert text.rstrip().endswith("b 2024-03-02: stg_b: no extract")


def test_status_says_paused_never_run_and_the_lag() -> None:
    today = dt.date(2024, 3, 12)
    tables = [table("fresh"), table("held", enabled=False), table("new")]
    runs = {
        name: run(
            table_name=name,
            last_processed=dt.date(2024, 3, 10),
            ended_at=dt.datetime(2024, 3, 11, 6, 0),
            watermark=None,
            latest_event_at=None,
        )
        for name in ("fresh", "held")
    }
    text = rendered(audit.status_table(tables, runs, today))
    lines = {line.split()[1]: line for line in text.splitlines() if line.startswith("│")}
    assert "2 day(s)" in lines["fresh"] and "yes" in lines["fresh"]
    assert "paused" in lines["held"]
    assert "never run" in lines["new"]


def test_a_feed_lag_gives_the_watermark_and_the_event_rate() -> None:
    feed = feed_table()
    last = run(
        last_processed=dt.date(2024, 3, 10),
        rows_in=5000,
        seconds=10.0,
        watermark='{"source_lsn":42}',
        latest_event_at=None,
    )
    assert audit.lag_text(feed, last, dt.date(2024, 3, 11)) == (
        '1 day(s), watermark {"source_lsn":42}, 500 events/s'
    )


def test_a_feed_lag_gives_the_latest_event_time_when_the_events_carry_it() -> None:
    feed = feed_table()
    two_hours_ago = dt.datetime.now() - dt.timedelta(hours=2)
    last = run(
        last_processed=dt.date.today(),
        rows_in=10,
        seconds=0,
        watermark='{"source_lsn":42}',
        latest_event_at=two_hours_ago,
    )
    assert audit.lag_text(feed, last, dt.date.today()) == "0 day(s), last event 2.0 h ago"


def test_a_streamed_feed_shows_how_soon_its_latest_event_was_applied() -> None:
    now = dt.datetime.now()
    last = run(
        last_processed=dt.date.today(),
        latest_event_at=now - dt.timedelta(seconds=30),
        ended_at=now - dt.timedelta(seconds=26),
    )
    assert audit.lag_text(feed_table(), last, dt.date.today()) == (
        "0 day(s), last event 30 s ago, applied 4 s after its commit"
    )


def test_the_report_has_a_panel_per_table_however_many_tables_there_are() -> None:
    from hashcdc.state.report import CHART_IDS, render_report

    rows = [
        run(
            table_name=f"t{i:02d}",
            ended_at=dt.datetime(2024, 3, 2, 6, i),
            model_seconds={f"stg_t{i:02d}": 1.0},
        )
        for i in range(40)
    ]
    # A streamed feed's micro-batches: a point each on the feed lag chart.
    rows += [
        run(
            table_name="streamed",
            ended_at=dt.datetime(2024, 3, 2, 7, 0, second),
            latest_event_at=dt.datetime(2024, 3, 2, 7, 0, second) - dt.timedelta(seconds=4),
            model_seconds={"stg_streamed": 1.0},
        )
        for second in (10, 20)
    ]
    # A failed run of t02's date, then one that went through after two retries.
    rows += [
        run(
            table_name="t02",
            status="error",
            ended_at=dt.datetime(2024, 3, 2, 5, 0),
            model_seconds={},
        ),
        run(table_name="t02", ended_at=dt.datetime(2024, 3, 2, 8, 0), retries=2, model_seconds={}),
    ]
    tables = [table("t00"), table("t01", enabled=False), table("streamed", slo={"within": "5s"})]
    page = render_report(rows, tables, dt.date(2024, 3, 3))
    assert all(f'id="{chart}"' in page for chart in CHART_IDS)
    assert '"name":"streamed"' in page.split('id="chart-feed-lag"')[1]
    # Its objective beside its samples (t00 has none: not on the chart).
    levels = page.split('id="chart-service-levels"')[1]
    assert '"name":"streamed: 99% within 5s"' in levels and '"name":"t00"' not in levels
    assert "<td>t01</td><td>paused</td>" in page and "<td>t39</td><td>removed</td>" in page
    counted = page.split('id="chart-failures"')[1]
    assert '"name":"retried"' in counted and '"name":"retries"' in counted
    assert '"name":"stopped"' not in counted


def test_the_dates_kept_var_is_read_under_its_earlier_name_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hashcdc.state.audit import state_dates_kept

    project = tmp_path / "dbt_project.yml"
    project.write_text("name: p\nvars:\n  hashcdc_state_dates_kept: 5\n")
    assert state_dates_kept(tmp_path) == 5
    assert capsys.readouterr().err == ""
    project.write_text("name: p\nvars:\n  hashcdc_state_snapshots_kept: 3\n")
    assert state_dates_kept(tmp_path) == 3
    assert "is now hashcdc_state_dates_kept" in capsys.readouterr().err
