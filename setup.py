"""The build's two steps that pyproject.toml cannot state: the dbt plugin's name and the dbt half.

- Packages are found (``hashcdc`` and every folder under it, data folders included), plus
  one mapped name: dbt loads a profile's ``type: hashcdc`` adapter as
  ``dbt.adapters.hashcdc``, which is the folder ``hashcdc/adapter``.
- The dbt half of hashcdc (its ``dbt_project.yml``, macros, generic tests, seeds and
  profiles: the repository root as a dbt package) is copied into the built package as
  ``hashcdc/dbt_package``, so a wheel-installed hashcdc makes projects whose
  ``packages.yml`` names it (``hashcdc.runtime.scaffold.package_root``). A checkout (an
  editable install) uses its root itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# The dbt half, as the repository root holds it; the wheel's copy has the same layout.
DBT_PACKAGE_PARTS = ("dbt_project.yml", "macros", "tests/generic", "seeds", "profiles")
DBT_PACKAGE_FOLDER = Path("hashcdc") / "dbt_package"
PLUGIN = "dbt.adapters.hashcdc"


class BuildWithDbtPackage(build_py):
    """``build_py`` that also copies the dbt half into the built package."""

    def run(self) -> None:
        """Build the Python packages, then the dbt package beside them."""
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / DBT_PACKAGE_FOLDER
        for part in DBT_PACKAGE_PARTS:
            source, copy = ROOT / part, target / part
            if source.is_dir():
                shutil.copytree(
                    source, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, copy)


setup(
    packages=[
        *find_namespace_packages(
            include=["hashcdc", "hashcdc.*"],
            # The plugin's macros are read from its dbt name (below), not from here.
            exclude=["*__pycache__*", "hashcdc.adapter.include*"],
        ),
        PLUGIN,
        f"{PLUGIN}.include",
        f"{PLUGIN}.include.macros",
    ],
    package_dir={PLUGIN: "hashcdc/adapter"},
    cmdclass={"build_py": BuildWithDbtPackage},
)
