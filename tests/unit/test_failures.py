"""Failures counted and retried: the retry rule, what may pass by itself, the counts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from hashcdc.errors import is_transient
from hashcdc.runtime.retry import Retries
from hashcdc.state import failures


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_retries_back_off_give_up_after_their_time_and_start_again_after_a_success() -> None:
    clock = Clock()
    retries = Retries(90, clock)
    pauses = []
    for _ in range(7):
        pause = retries.failed("no Kafka broker answers")
        assert pause is not None
        pauses.append(pause)
        clock.now += pause
    # 1, 2, 4 … then at most 30 s, the last one ending just past the 90 s.
    assert pauses == [1, 2, 4, 8, 16, 30, pytest.approx(29.1)]
    assert retries.failed("no Kafka broker answers") is None
    assert (retries.count, retries.total, retries.reason) == (8, 7, "no Kafka broker answers")
    assert retries.succeeded() == 8
    assert retries.failed("again") == 1 and retries.lasted == 0
    clock.now += 5
    assert retries.lasted == 5


def test_what_may_pass_by_itself_is_told_from_what_does_not() -> None:
    for message in (
        "table 'x': no Kafka broker answers (127.0.0.1:9: Connection refused): check ...",
        "[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: Files were added ...",
        "org.apache.hadoop.hive.ql.metadata.HiveException: MetaException(message:Could not "
        "connect to meta store using any of the URIs provided)",
        "table 'x' is being processed by another run (pid 12 on h, since 10:00); nothing ...",
        "org.apache.hadoop.hive.ql.metadata.HiveException: Unable to fetch table x_state. "
        "Connection to 127.0.0.1:45565 refused. Check that the hostname and port are correct",
    ):
        assert is_transient(message), message
    for message in (
        "table 'x': 3 rows have more fields than the header (file a.csv, line 4)",
        "x_state: refused: 80% of the keys would be deleted (max_delete_fraction 0.5)",
        "accepted_values_x_current_operation: Got 1 result, configured to fail if != 0",
    ):
        assert not is_transient(message), message


def _run(table: str, date: str, status: str, minute: int, **extra: object) -> dict[str, object]:
    return {
        "table_name": table,
        "business_date": dt.date.fromisoformat(date),
        "status": status,
        "ended_at": dt.datetime(2024, 3, 5, 6, minute),
        "rejects": extra.get("rejects", 0),
        "retries": extra.get("retries", 0),
    }


def test_a_dates_failed_runs_are_retried_or_stopped_and_its_latest_rejects_counted() -> None:
    runs = [
        # Failed twice, then applied after the stream rode through three retries.
        _run("a", "2024-03-01", "error", 1, rejects=None),
        _run("a", "2024-03-01", "error", 2, rejects=None),
        _run("a", "2024-03-01", "success", 3, rejects=4, retries=3),
        # Applied (2 rejected), then a rerun that failed: stopped.
        _run("a", "2024-03-02", "warn", 4, rejects=2),
        _run("a", "2024-03-02", "skipped", 5, rejects=None),
        _run("b", "2024-03-01", "success", 6, retries=None),
    ]
    dates = failures.date_failures(runs)
    assert [
        (d.table, d.business_date, d.failed, d.retried, d.stopped, d.retries, d.quarantined)
        for d in dates
    ] == [  # fmt: skip
        ("a", "2024-03-01", 2, 2, False, 3, 4),
        ("a", "2024-03-02", 1, 0, True, 0, 0),
        ("b", "2024-03-01", 0, 0, False, 0, 0),
    ]
    totals = failures.totals(dates)
    assert totals["a"] == failures.Totals(failed=3, retried=2, stopped=1, retries=3, quarantined=4)
    assert failures.failures_text(totals["a"], None) == (
        "3 failed (2 retried, 1 stopped); 3 retries; 4 quarantined"
    )
    assert failures.failures_text(totals["b"], None) == "none"


def test_a_streams_stop_is_kept_read_back_named_by_the_check_and_cleared(tmp_path: Path) -> None:
    stop = failures.Stop(
        ["p", "q"], "2024-03-01", "no Kafka broker answers", "2024-03-05T06:00:00", 7
    )
    failures.record_stop(tmp_path, "crm", stop)
    stops = failures.stream_stops(tmp_path)
    assert stops == {"p": stop, "q": stop}
    assert "stream paused" in failures.failures_text(None, stop)
    lines = failures.stopped_lines(stops, ["p", "other"])
    assert len(lines) == 1 and lines[0].startswith("p: the stream paused it at 2024-03-05T06:00:00")
    assert "after 7 retries): no Kafka broker answers" in lines[0]
    failures.clear_stop(tmp_path, "crm")
    assert failures.stream_stops(tmp_path) == {}
