"""hashcdc installed as users install tools: a wheel in a fresh environment, no checkout.

The wheel and the sdist are built from this checkout (the wheel from the sdist, as
``python -m build`` does), the wheel is installed into a new virtual environment (not
editable), and every command runs from a folder outside the checkout with the checkout
nowhere on ``sys.path``: a wing of the package or a file of the dbt half left out of the
build fails here. The JVM packages go to a cache of the test's own, fetched by the first
command that needs Spark.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

import hashcdc

REPO = Path(__file__).resolve().parents[2]


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def test_the_wheel_alone_makes_a_project_runs_a_date_and_shows_its_status(
    tmp_path: Path, engines_dir: Path
) -> None:
    dist = tmp_path / "dist"
    build = [sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)]
    _run(build, tmp_path, dict(os.environ))
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert [w.name for w in wheels] == [f"hashcdc-{hashcdc.__version__}-py3-none-any.whl"]
    assert len(sdists) == 1

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HASHCDC_", "PYTHON", "VIRTUAL_ENV", "DBT_"))
    } | {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HASHCDC_ENGINE_DIR": str(engines_dir),
        "HASHCDC_ENGINE_IDLE_MINUTES": "5",
        "HASHCDC_DRIVER_MEMORY": "1g",
        "HASHCDC_LOCAL_MASTER": "local[2]",
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "TZ": "UTC",
    }
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "--quiet", str(wheels[0])], outside, env)

    where = _run([python, "-c", "import hashcdc, sys; print(hashcdc.__file__, sys.path)"],
                 outside, env)  # fmt: skip
    assert str(venv) in where.split()[0] and str(REPO) not in where
    assert _run(["hashcdc", "--version"], outside, env).strip() == f"hashcdc {hashcdc.__version__}"

    made = _run(["hashcdc", "new", "lake"], outside, env)
    assert "created the hashcdc project" in made
    project = outside / "lake"
    (listed,) = yaml.safe_load((project / "packages.yml").read_text())["packages"]
    # The installed package's own dbt half, installed by `dbt deps` without a network.
    package = Path(listed["local"])
    assert package.is_relative_to(venv) and (package / "dbt_project.yml").is_file()
    assert (project / "dbt_packages" / "hashcdc").resolve() == package.resolve()
    assert (package / "macros" / "cdc" / "cdc_state.sql").is_file()
    assert (package / "tests" / "generic" / "operation_counts_reconcile.sql").is_file()

    demo = _run(["hashcdc", "demo", "--dates", "1"], project, env)
    # The first command that needs Spark fetched the JVM packages into the user's cache.
    assert "fetching 8 JVM package(s)" in demo and "io.delta:delta-spark_2.13" in demo
    assert (tmp_path / "cache" / "hashcdc" / "jars" / "delta-spark_2.13-4.0.0.jar").is_file()
    assert "2019-06-18  current: I=10000" in demo and "history: I=10000" in demo
    assert "2019-06-19" not in demo.split("Operations per business date")[1]

    status = _run(["hashcdc", "status"], project, env)
    (row,) = [line for line in status.splitlines() if "article_demo" in line]
    assert "success (2019-06-18)" in row and "10,000/0/0/0/0" in row
    _run(["hashcdc", "engine", "stop"], project, env)
