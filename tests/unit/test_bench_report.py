"""The bench report's end-to-end figures: both days, both modes, against issue 44's target."""

from __future__ import annotations

from typing import Any

from hashcdc.bench.report import _days_end_to_end, _targets


def _size(**figures: Any) -> dict[str, Any]:
    return {
        "rows": 1_000_000,
        "day2_run_s": 50.0,
        "day3_run_s": 30.0,
        "stage_compute_s": 6.0,
        **figures,
    }


def _report(size: dict[str, Any]) -> dict[str, Any]:
    return {"sizes": [size], "machine": {"driver_memory": "4g"}}


def test_end_to_end_days_are_judged_against_one_and_a_half_times_the_peer() -> None:
    size = _size(
        end_to_end_day2_s=30.0,
        peer_day2_s=20.0,
        end_to_end_day3_s=39.16,
        peer_day3_s=11.55,
    )
    rows = [line for line in _targets(_report(size)) if "end to end" in line]
    assert len(rows) == 2, rows
    assert "article's day 2" in rows[0] and "30.0 s vs 20.0 s: 1.50×" in rows[0]
    assert rows[0].endswith("| yes |"), rows[0]
    assert "typical day (1% changed)" in rows[1] and "3.39×" in rows[1]
    assert rows[1].endswith("| no |"), rows[1]


def test_a_day_without_the_peer_or_the_run_is_left_out_of_the_targets() -> None:
    size = _size(end_to_end_day2_s=30.0)
    assert not [line for line in _targets(_report(size)) if "end to end" in line]


def test_the_fixed_cost_table_shows_both_days_of_each_mode() -> None:
    size = _size(end_to_end_day2_s=69.88, end_to_end_day3_s=39.16, end_to_end_day2_no_engine_s=1.0)
    assert _days_end_to_end(size, "") == "69.88 / 39.16"
    assert _days_end_to_end(size, "_no_engine") == "1.0 / —"
