"""The generator: thin files, deterministic output, drift detection."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hashcdc.cli import main
from hashcdc.codegen import generate
from hashcdc.config import load_table_configs

REPO = Path(__file__).resolve().parents[2]
CONFIG = """
name: orders
extract_type: delta
source: {path: 'landing/orders/{business_date}.csv'}
columns:
  - {name: id, type: bigint, key: true}
  - {name: total, type: 'decimal(12,2)'}
"""


def make_project(tmp_path: Path) -> Path:
    shutil.copy(REPO / "dbt_project.yml", tmp_path / "dbt_project.yml")
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "orders.yml").write_text(CONFIG)
    return tmp_path


def test_generated_models_are_thin_macro_calls(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    changed = generate.write(project, load_table_configs(project / "tables"))
    assert {p.as_posix() for p in changed} == {
        "python_models/stg_orders.py",
        "python_models/stg_orders.yml",
        "python_models/orders_rejects.py",
        "models/orders/orders_state.sql",
        "models/orders/orders_current.sql",
        "models/orders/orders_history.sql",
        "models/orders/orders_scd2.sql",
        "models/orders/_orders__models.yml",
    }
    state = (project / "models/orders/orders_state.sql").read_text()
    assert "hashcdc.cdc_state(" in state and "extract_type='delta'" in state
    assert "select" not in state.lower().replace("hashcdc", "")
    # A config block and one macro call: its column lists are its only bulk.
    assert len(state.splitlines()) < 35
    stage = (project / "python_models/stg_orders.py").read_text()
    assert "typecast_and_hash" in stage and len(stage.splitlines()) < 25
    rejects = (project / "python_models/orders_rejects.py").read_text()
    assert "rejected_rows(" in rejects and len(rejects.splitlines()) < 25
    # Writing again changes nothing.
    assert generate.write(project, load_table_configs(project / "tables")) == []


def test_check_reports_drift_and_stale_files(tmp_path: Path, capsys) -> None:
    project = make_project(tmp_path)
    assert main(["--project-dir", str(project), "generate"]) == 0
    assert main(["--project-dir", str(project), "generate", "--check"]) == 0

    (project / "tables" / "orders.yml").write_text(CONFIG.replace("delta", "full"))
    assert main(["--project-dir", str(project), "generate", "--check"]) == 1
    assert "models/orders/orders_state.sql: differs" in capsys.readouterr().err

    (project / "tables" / "orders.yml").unlink()
    assert main(["--project-dir", str(project), "generate", "--check"]) == 1
    err = capsys.readouterr().err
    assert "generated for a table that no longer exists" in err
    assert main(["--project-dir", str(project), "generate"]) == 0
    assert not (project / "models/orders/orders_state.sql").exists()


def test_validate_exits_non_zero_with_every_problem(tmp_path: Path, capsys) -> None:
    project = make_project(tmp_path)
    (project / "tables" / "bad.yml").write_text("name: bad\nextract_type: nope\n")
    assert main(["--project-dir", str(project), "validate"]) == 2
    err = capsys.readouterr().err
    assert "tables/bad.yml: extract_type" in err and "tables/bad.yml: columns" in err


def test_repository_models_match_its_tables() -> None:
    """The checkout's projects: the package's root (no table) and the demo's."""
    for project in (REPO, REPO / "integration_tests"):
        assert generate.check(project, load_table_configs(project / "tables")) == [], project


def test_change_feeds_get_thin_feed_models(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project / "tables" / "orders.yml").write_text(
        CONFIG.replace("extract_type: delta", "extract_type: changes")
        .replace(", key: true", "")
        .replace("orders/{business_date}.csv'}", "orders/{business_date}/*', format: debezium}")
        + "changes: {sequence_by: [source.lsn], history: audit}\n"
    )
    generate.write(project, load_table_configs(project / "tables"))
    models = project / "models/orders"
    state = (models / "orders_state.sql").read_text()
    assert "hashcdc.cdc_feed_state(" in state and "keyless=true" in state
    assert "hashcdc.current_state(" in (models / "orders_current.sql").read_text()
    assert "counted=true" in (models / "orders_current.sql").read_text()
    history = (models / "orders_history.sql").read_text()
    assert "hashcdc.feed_events_history(" in history and "ref('stg_orders')" in history
    assert "audit=true" in (models / "orders_scd2.sql").read_text()
    properties = (models / "_orders__models.yml").read_text()
    assert "extract_type: changes" in properties and "- R\n" in properties
    for path in models.glob("*.sql"):
        assert len(path.read_text().splitlines()) < 30, path


def test_a_run_with_no_table_configured_fails_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:

    shutil.copy(REPO / "dbt_project.yml", tmp_path / "dbt_project.yml")
    (tmp_path / "tables").mkdir()
    assert main(["--project-dir", str(tmp_path), "run", "--date", "2024-01-01"]) == 2
    message = capsys.readouterr().err
    assert "no table is configured" in message and "Adding a table" in message


def test_dbt_writes_no_colour_codes_into_files_or_pipes(tmp_path: Path) -> None:
    from hashcdc.runtime.project import dbt_args

    args = dbt_args("build", tmp_path)  # pytest captures stdout: not a terminal
    assert "--no-use-colors-file" in args and "--no-use-colors" in args
