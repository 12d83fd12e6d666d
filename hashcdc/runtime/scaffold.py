"""A new hashcdc project anywhere, with the dbt half installed as a package (``hashcdc new``).

hashcdc's repository root is a dbt project (the demo) and a dbt package, as dbt-utils'
root is: its macros and generic tests reach another project through that project's
``packages.yml`` and ``dbt deps``, never by copying. A new project holds what is its own:
``tables/``, the generated ``models/`` and ``python_models/``, ``seeds/``, ``profiles/``
(the package's targets), and a ``dbt_project.yml`` whose vars are the package's defaults
(a var a model's config reads is the project's own in dbt). The package's seed of the
demo's expected counts is built there too, so ``hashcdc demo`` runs in any project; the
demo itself lives in ``integration_tests/``, a project of the checkout made this way.

The tests, the bench and the class archive's training run work in such projects too
(:func:`scratch_project`), each with a warehouse and metastore of its own.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from hashcdc.errors import HashcdcError

# The package's name in dbt (its macros are called `hashcdc.<macro>`).
PACKAGE_NAME = "hashcdc"
PROJECT_FOLDERS = ("tables", "models", "python_models", "seeds")
IGNORED = (
    "target/",
    "dbt_packages/",
    "logs/",
    "warehouse/",
    "metastore_db/",
    "metastore_db.lock",
    "landing/",
    "derby.log",
)
NAME_PATTERN = re.compile(r"^[a-z_][a-z0-9_]*$")
PROJECT_HEADER = (
    "# A hashcdc project (`hashcdc new`). Its vars are hashcdc's defaults: the package's\n"
    "# dbt_project.yml (dbt_packages/hashcdc) says what each does. Its macros and tests\n"
    "# come from packages.yml (`dbt deps`); models in the package's folders stay off here.\n"
)


def package_root() -> Path:
    """The dbt package this hashcdc comes with.

    A built hashcdc (a wheel) carries it as ``hashcdc/dbt_package`` (setup.py copies the
    repository root's dbt half there); a source checkout's is the checkout's root.
    """
    packaged = Path(__file__).resolve().parents[1] / "dbt_package"
    if (packaged / "dbt_project.yml").is_file():
        return packaged
    root = Path(__file__).resolve().parents[2]
    if not (root / "dbt_project.yml").is_file():
        raise HashcdcError(
            f"no dbt package in this hashcdc ({packaged} and {root} have no dbt_project.yml): "
            "reinstall hashcdc, or pass --package with the path of a hashcdc checkout or a "
            "git URL"
        )
    return root


def _package_reference(package: Path | str, root: Path) -> dict[str, Any]:
    """The ``packages.yml`` entry of the package: a local path or a git repository.

    A local package is named relative to the project when the project is inside it (a
    project of the package's own checkout, which moves with it), else by its full path.
    """
    text = str(package)
    if re.match(r"^(https?://|git@|ssh://)", text):
        url, _, revision = text.partition("@") if text.startswith("http") else (text, "", "")
        return {"git": url, **({"revision": revision} if revision else {})}
    local, project = Path(text).resolve(), root.resolve()
    if project.is_relative_to(local):
        return {"local": os.path.relpath(local, project)}
    return {"local": str(local)}


def project_file(package: Path, name: str) -> dict[str, Any]:
    """A new project's ``dbt_project.yml``, from the package's own.

    The paths, vars, the on-run-end audit hook (dbt runs the root project's hooks) and the
    model, seed and test settings are the package's, under the new project's name; the
    doc blocks stay the package's.
    """
    own = yaml.safe_load((package / "dbt_project.yml").read_text(encoding="utf-8"))
    settings = {
        key: value
        for key, value in own.items()
        if key not in ("name", "docs-paths", "models", "seeds", "data_tests")
    }
    return {
        "name": name,
        **settings,
        "models": {
            name: own.get("models", {}).get(PACKAGE_NAME, {}),
            # Models generated in the package's own checkout are that project's.
            PACKAGE_NAME: {"+enabled": False},
        },
        "seeds": {name: own.get("seeds", {}).get(PACKAGE_NAME, {})},
        "data_tests": {name: own.get("data_tests", {}).get(PACKAGE_NAME, {})},
    }


def new_project(root: Path, package: Path | str | None = None, name: str | None = None) -> None:
    """Create a hashcdc project in ``root`` and install the package into it (``dbt deps``).

    ``package``: a hashcdc checkout's path or a git URL (default: :func:`package_root`).

    Raises
    ------
    HashcdcError
        When ``root`` already holds a dbt project, or the name is not a dbt name.

    """
    name = name or root.resolve().name.replace("-", "_").lower()
    if not NAME_PATTERN.match(name):
        raise HashcdcError(
            f"'{name}' is not a dbt project name (lower-case letters, digits, _): pass --name"
        )
    if (root / "dbt_project.yml").exists():
        raise HashcdcError(f"{root} already holds a dbt project (dbt_project.yml)")
    source = package if package is not None else package_root()
    reference = _package_reference(source, root)
    local = Path(source) if "local" in reference else package_root()
    root.mkdir(parents=True, exist_ok=True)
    for folder in PROJECT_FOLDERS:
        (root / folder).mkdir(exist_ok=True)
    shutil.copytree(local / "profiles", root / "profiles", dirs_exist_ok=True)
    (root / "dbt_project.yml").write_text(
        PROJECT_HEADER + yaml.safe_dump(project_file(local, name), sort_keys=False),
        encoding="utf-8",
    )
    (root / "packages.yml").write_text(
        yaml.safe_dump({"packages": [reference]}, sort_keys=False),
        encoding="utf-8",
    )
    (root / ".gitignore").write_text("".join(f"{line}\n" for line in IGNORED), encoding="utf-8")
    # dbt loads only when a project is made (it takes a second).
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke(["deps", "--project-dir", str(root), "--quiet"])
    if not result.success:
        raise HashcdcError(f"dbt deps failed in {root}: {result.exception or 'see above'}")


def package_of(project_dir: Path) -> Path:
    """The hashcdc package a project uses.

    Itself (the package's own root), the local package its ``packages.yml`` installs, or
    this hashcdc's (:func:`package_root`).
    """
    own = yaml.safe_load((project_dir / "dbt_project.yml").read_text(encoding="utf-8"))
    if own.get("name") == PACKAGE_NAME:
        return project_dir
    listed = project_dir / "packages.yml"
    packages = yaml.safe_load(listed.read_text(encoding="utf-8")) if listed.is_file() else {}
    for entry in (packages or {}).get("packages", []):
        if "local" not in entry:
            continue
        # dbt takes a relative path from the project's folder (`local: ..`).
        local = (project_dir / str(entry["local"])).resolve()
        if (local / "dbt_project.yml").is_file():
            return local
    return package_root()


def scratch_project(project_dir: Path, root: Path) -> dict[str, str]:
    """A new project in ``root`` on the package ``project_dir`` uses, with its own warehouse.

    Returns the environment variables that point the profile's ``local`` target at the
    scratch warehouse and metastore; the caller sets them before Spark starts.
    """
    package = package_of(project_dir)
    new_project(root, package, name="scratch")
    return {
        "HASHCDC_WAREHOUSE_DIR": str(root / "warehouse"),
        "HASHCDC_METASTORE_DIR": str(root / "metastore_db"),
        "HASHCDC_DERBY_LOG": str(root / "derby.log"),
        "HASHCDC_LOG4J2": str(package / "profiles" / "log4j2.properties"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
