"""A tiny run of ``hashcdc bench``: the script works end to end (timings are not checked)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hashcdc.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_bench_smoke(project: Any, tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    for name in [k for k in os.environ if k.startswith("HASHCDC_")]:
        monkeypatch.setenv(name, os.environ[name])  # restored after the test
    project.spark  # noqa: B018 - the shared session exists before the bench starts
    report = tmp_path / "bench.md"
    status = main(
        [
            "--project-dir",
            str(REPO),
            "bench",
            "--rows",
            "1000",
            "--peer",
            "dbt-duckdb",
            "--end-to-end-max-rows",
            "0",
            "--week-days",
            "1",
            "--skip-tests",
            "--output",
            str(tmp_path / "out"),
            "--report",
            str(report),
        ]
    )
    assert status == 0
    figures = json.loads((tmp_path / "out" / "bench.json").read_text())
    (size,) = figures["sizes"]
    assert size["rows"] == 1000
    assert size["day2_run_s"] > 0 and size["day2_copy_floor_s"] > 0
    assert size["day3_run_s"] > 0 and size["dbt_parse_new_date_s"] > 0
    assert size["stage_compute_s"] > 0 and size["delta_day2_run_s"] > 0
    assert size["changes_day2_run_s"] > 0
    # The delta table's and the feed's day 2 applied 1% of the keys as updates (10 of 1,000).
    for table in ("bench_1000_delta", "bench_1000_changes"):
        counts = project.rows(
            f"select operation, count(*) as n from {table}_history "
            "where business_date = date'2019-06-19' group by operation"
        )
        assert {row["operation"]: row["n"] for row in counts} == {"U": 10}, table
    # The peer saw the same data: its current rows match hashcdc's current table, per case.
    for table, prefix in (
        ("bench_1000", ""),
        ("bench_1000_delta", "delta_"),
        ("bench_1000_changes", "changes_"),
    ):
        current = project.rows(f"select count(*) as n from {table}_current")[0]["n"]
        assert size[f"peer_{prefix}current_rows"] == current, table
        assert size[f"peer_{prefix}day2_s"] > 0
    # A week of uncompacted deltas (here one day) is read before and after compaction.
    assert size["week_read_uncompacted"]["count_s"] > 0 and size["week_compact_s"] > 0
    assert size["day3_bytes_written"]["<table>_state"] > 0
    assert "| 1,000 | typical day" in report.read_text()
    os.chdir(project.root)
