"""`hashcdc new`: a project anywhere, hashcdc's dbt half installed as a package by dbt deps.

The functional tier runs every test in projects made this way (tests/conftest.py), so
what a made project can do is tested there; here, what the command writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hashcdc.cli import main
from hashcdc.runtime.scaffold import package_of, package_root, project_file

REPO = Path(__file__).resolve().parents[2]


def test_a_new_project_installs_the_package_and_copies_no_macro(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "my-lake"
    assert main(["new", str(root)]) == 0
    assert "next: cd" in capsys.readouterr().out
    project = yaml.safe_load((root / "dbt_project.yml").read_text())
    package = yaml.safe_load((REPO / "dbt_project.yml").read_text())
    assert project["name"] == "my_lake" and project["vars"] == package["vars"]
    assert project["models"]["hashcdc"] == {"+enabled": False}
    # The package by its full path (the project is outside the checkout), linked by dbt.
    assert yaml.safe_load((root / "packages.yml").read_text()) == {
        "packages": [{"local": str(REPO)}]
    }
    assert (root / "dbt_packages" / "hashcdc").resolve() == REPO
    assert not (root / "macros").exists() and not (root / "tests").exists()
    for folder in ("tables", "models", "python_models", "seeds"):
        assert (root / folder).is_dir()
    assert (root / "profiles" / "profiles.yml").read_text() == (
        REPO / "profiles" / "profiles.yml"
    ).read_text()
    assert package_of(root) == REPO == package_root() == package_of(REPO)

    assert main(["new", str(root)]) == 2
    assert "already holds a dbt project" in capsys.readouterr().err
    assert main(["new", str(tmp_path / "x"), "--name", "Not-A-Name"]) == 2
    assert "is not a dbt project name" in capsys.readouterr().err


def test_the_demo_project_of_the_checkout_names_its_package_relatively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = yaml.safe_load((REPO / "integration_tests" / "packages.yml").read_text())
    assert listed == {"packages": [{"local": ".."}]}
    # Relative to the project, as dbt reads it, not to the folder a command runs in (whose
    # parent here holds another dbt project).
    (tmp_path / "dbt_project.yml").write_text("name: elsewhere\n")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert package_of(REPO / "integration_tests") == REPO


def test_the_demo_project_file_is_what_hashcdc_new_writes() -> None:
    # Its audit hook, vars and settings follow the package's own dbt_project.yml: a hook
    # missing there leaves every run without its summary.
    made = yaml.safe_load((REPO / "integration_tests" / "dbt_project.yml").read_text())
    assert made == project_file(REPO, "integration_tests")
    assert made["on-run-end"] == ["{{ hashcdc.record_cdc_runs(results) }}"]
