"""What the wheel is made of: every module it imports is a declared, pinned dependency.

The build itself (packages found, the dbt half inside) is checked by installing the wheel
(tests/functional/test_install.py); this is the part that needs no build.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import hashcdc

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    return re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported_modules() -> dict[str, set[str]]:
    """Top-level modules imported anywhere in the package (deferred imports too) -> files."""
    found: dict[str, set[str]] = {}
    for path in (REPO / "hashcdc").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(REPO)))
    return found


def test_every_imported_module_comes_from_a_declared_pinned_dependency() -> None:
    core = {_name(r): r for r in PROJECT["dependencies"]}
    extras = {
        _name(r): (extra, r)
        for extra, requirements in PROJECT["optional-dependencies"].items()
        for r in requirements
    }
    distributions = importlib.metadata.packages_distributions()
    undeclared = []
    for module, files in sorted(_imported_modules().items()):
        if module in sys.stdlib_module_names or module in ("hashcdc", "__future__"):
            continue
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
        assert names, f"{module} (imported in {sorted(files)}) is not installed"
        if names & core.keys():
            continue
        # The bench's peers and broker client are extras: `pip install hashcdc[bench]`.
        optional = [extras[n] for n in names & extras.keys()]
        if optional and all(f.startswith("hashcdc/bench/") for f in files):
            continue
        undeclared.append(f"{module} ({', '.join(sorted(names))}) in {sorted(files)}")
    assert not undeclared, "imported but not declared in pyproject.toml: " + "; ".join(undeclared)
    loose = [r for r in PROJECT["dependencies"] if "==" not in r]
    assert not loose, f"dependencies not pinned: {loose}"


def test_one_version_string() -> None:
    # pyproject reads it from the package; the dbt half states none of its own.
    assert PROJECT["dynamic"] == ["version"] and "version" not in PROJECT
    assert re.fullmatch(r"\d+\.\d+\.\d+", hashcdc.__version__)
    assert not re.search(r"^version:", (REPO / "dbt_project.yml").read_text(), re.MULTILINE)
