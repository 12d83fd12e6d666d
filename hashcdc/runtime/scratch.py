"""A scratch project: a project's skeleton copied beside it, with a warehouse of its own.

The tests, the bench and the class archive's training run work in such a project, so
that nothing they write reaches the project's own warehouse and metastore.
"""

from __future__ import annotations

import shutil
from pathlib import Path

SCRATCH_ITEMS = ("dbt_project.yml", "profiles", "macros", "seeds", "tests/generic")


def scratch_project(source: Path, root: Path) -> dict[str, str]:
    """Copy a project's skeleton (no tables) to ``root``, with its own warehouse.

    Returns the environment variables that point the profile's ``local`` target at the
    scratch warehouse and metastore; the caller sets them before Spark starts.
    """
    for item in SCRATCH_ITEMS:
        origin = source / item
        if origin.is_dir():
            shutil.copytree(origin, root / item)
        else:
            shutil.copy(origin, root / item)
    for folder in ("tables", "models", "python_models"):
        (root / folder).mkdir(exist_ok=True)
    return {
        "HASHCDC_WAREHOUSE_DIR": str(root / "warehouse"),
        "HASHCDC_METASTORE_DIR": str(root / "metastore_db"),
        "HASHCDC_DERBY_LOG": str(root / "derby.log"),
        "HASHCDC_LOG4J2": str(source / "profiles" / "log4j2.properties"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
