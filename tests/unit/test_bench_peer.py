"""A bench peer that fails: the bench keeps its figures and says which peer failed, and why.

A real dbt-duckdb peer (its own process, no Spark) on a table whose extract is missing.
"""

from __future__ import annotations

import types
from pathlib import Path

import yaml

from hashcdc.bench.peer import DuckdbPeer, PeerCase
from hashcdc.bench.report import _peer_cell
from hashcdc.bench.run import _peer_days

COLUMNS = [{"name": "id", "type": "bigint", "key": True}, {"name": "name", "type": "string"}]


def test_a_failing_peer_is_recorded_and_the_bench_goes_on(tmp_path: Path) -> None:
    case = PeerCase(name="gone", extract_type="full", landing=tmp_path / "nothing", columns=COLUMNS)
    peer = DuckdbPeer(tmp_path / "peer", [case])
    # DuckDB may use half the memory free now, and spills beyond it instead of being killed.
    profile = yaml.safe_load((tmp_path / "peer" / "profiles.yml").read_text())
    limit = profile["hashcdc_peer"]["outputs"]["bench"]["settings"]["memory_limit"]
    assert limit.endswith("MiB") and int(limit[:-3]) > 0

    options = types.SimpleNamespace(table_name="gone", dates=["2024-01-01", "2024-01-02"])
    figures = _peer_days(None, peer, options, "")

    failure = figures["peer_failed"]
    assert failure.startswith("day 1: peer dbt-duckdb: dbt build --select +snap_gone failed")
    assert "exit status" in failure
    assert "peer_day1_s" not in figures and "peer_current_rows" not in figures
    size = {"rows": 10, **figures}
    assert _peer_cell(size, "peer", "day2") == "failed"
    assert _peer_cell(size, "spark_peer", "day2") == "—"
