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
            "--repeat",
            "1",
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
    assert size["day2_run_s"] > 0 and size["copy_floor_s"] > 0
    assert size["stage_compute_s"] > 0 and size["delta_day2_run_s"] > 0
    assert size["changes_day2_run_s"] > 0
    # The delta table's and the feed's day 2 applied 1% of the keys as updates (10 of 1,000).
    for table in ("bench_1000_delta", "bench_1000_changes"):
        counts = project.rows(
            f"select operation, count(*) as n from {table}_history "
            "where business_date = date'2019-06-19' group by operation"
        )
        assert {row["operation"]: row["n"] for row in counts} == {"U": 10}, table
    assert "| 1,000 |" in report.read_text()
    os.chdir(project.root)
