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
    # The delta table's and the feed's day 2 applied 1% of the keys as updates (10 of 1,000):
    # the audit keeps the counts after the bench dropped each measured case's tables.
    for table in ("bench_1000_delta", "bench_1000_changes"):
        (counts,) = project.rows(
            "select inserted, updated, deleted from cdc_runs "
            f"where table_name = '{table}' and business_date = date'2019-06-19' "
            "and command = 'run' order by ended_at desc limit 1"
        )
        assert (counts["inserted"], counts["updated"], counts["deleted"]) == (0, 10, 0), table
    # The peer saw the same data: its current rows match hashcdc's current table, per case.
    for prefix in ("", "delta_", "changes_"):
        assert size[f"peer_{prefix}current_rows"] == size[f"{prefix}current_rows"] > 0, prefix
        assert size[f"peer_{prefix}day2_s"] > 0
    # Each measured case's tables are gone (a 10M bench filled the disk); dbt's temporary
    # views of the session hold no data.
    tables = project.rows("show tables like 'bench_1000*'")
    assert [row["tableName"] for row in tables if not row["isTemporary"]] == []
    # A week of uncompacted deltas (here one day) is read before and after compaction.
    assert size["week_read_uncompacted"]["count_s"] > 0 and size["week_compact_s"] > 0
    assert size["day3_bytes_written"]["<table>_state"] > 0
    assert "| 1,000 | typical day" in report.read_text()
    os.chdir(project.root)
