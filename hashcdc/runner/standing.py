"""What stands from date to date: the group views and package seeds a build leaves out.

A group's views (its current view, each member's current, history, scd2 and rejects) are
definitions over the group's tables, not data, and a seed is the data of its CSV file: no
date changes them, yet ``dbt build`` creates each view and loads each seed it builds again
(0.1-0.3 s a view here, 400 of them for a group of 100 tables; 0.6-0.9 s a seed, the
package's seed of the demo's expected counts in every project). So a date's build
excludes every one that the catalog has and that was last built from the files of now
(a seed only when no test reads it: :func:`seed_fingerprints`);
one whose files changed (a config, a CSV, its properties) or that the catalog lacks is
built with the date. Their fingerprints when last built are kept in
``target/hashcdc_views.json`` (gone with ``dbt clean``: they are then built once again).
``dbt build`` run by hand builds them all, as dbt always does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import yaml

from hashcdc.codegen import generate
from hashcdc.config import TableConfig
from hashcdc.state.versions import relation_names

RECORD = Path("target") / "hashcdc_views.json"
PROJECT_FILE = "dbt_project.yml"


def fingerprints(tables: list[TableConfig]) -> dict[str, str]:
    """Every group view of the project by name, with its generated file's fingerprint.

    Rendered once a command (rendering every group's files is 0.3 s for 100 tables).
    """
    return {
        name: hashlib.sha256(text.encode("utf-8")).hexdigest()
        for name, text in generate.group_views(tables).items()
    }


def seed_fingerprints(project_dir: Path, tables: Sequence[TableConfig]) -> dict[str, str]:
    """The seeds of the installed packages a date may leave out, each with a fingerprint.

    Only the packages' seeds (the demo's expected counts), and only those no table tests
    against (``expected_counts_seed``): dbt leaves a node's tests out with it, so a seed a
    test reads — any of the project's own, which its tests may read — is loaded with every
    date, as ``dbt build`` does. A seed's fingerprint covers what dbt loads it from: its
    CSV, the property files beside it (column types), and the ``dbt_project.yml`` of the
    project and of its package (their seed configs). A seed whose name is not its table's
    (an alias or schema of its own) is not found in the catalog: loaded every date.
    """
    packages = project_dir / "dbt_packages"
    if not packages.is_dir():
        return {}
    tested = {t.expected_counts_seed for t in tables if t.expected_counts_seed}
    root_file = (project_dir / PROJECT_FILE).read_bytes()
    found: dict[str, str] = {}
    for package in sorted(p for p in packages.iterdir() if (p / PROJECT_FILE).is_file()):
        own_file = (package / PROJECT_FILE).read_bytes()
        settings = yaml.safe_load(own_file) or {}
        for folder_name in settings.get("seed-paths") or ["seeds"]:
            for csv in sorted((package / folder_name).rglob("*.csv")):
                if csv.stem in tested or csv.stem in found:
                    continue
                digest = hashlib.sha256(root_file + own_file + _properties(csv.parent))
                digest.update(csv.read_bytes())
                found[csv.stem] = digest.hexdigest()
    return found


def _properties(folder: Path) -> bytes:
    """The property files of a seed folder (its seeds' column types), read as they are."""
    return b"".join(
        path.read_bytes() for path in sorted(folder.iterdir()) if path.suffix in (".yml", ".yaml")
    )


def _recorded(project_dir: Path) -> dict[str, str]:
    try:
        found = json.loads((project_dir / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def standing(spark: Any, project_dir: Path, wanted: dict[str, str]) -> list[str]:
    """The views and seeds a date's build need not create: built from today's files, there.

    ``wanted``: their fingerprints (:func:`fingerprints`, :func:`seed_fingerprints`).
    """
    if not wanted:
        return []
    recorded = _recorded(project_dir)
    unchanged = [name for name, print_ in wanted.items() if recorded.get(name) == print_]
    if not unchanged:
        return []
    existing = relation_names(spark, spark.catalog.currentDatabase())
    return sorted(name for name in unchanged if name in existing)


def excluded(stand: list[str], views: Collection[str]) -> list[str]:
    """Dbt ``--exclude`` arguments that leave the standing views and seeds out of a build.

    ``views``: every group view. One tag when every group view stands (each name is one
    more pass of dbt's selector over the graph: seconds a date for a group of 100 tables),
    else their names; the standing seeds by name.
    """
    standing_views = [name for name in stand if name in views]
    names = [name for name in stand if name not in views]
    if standing_views and len(standing_views) == len(views):
        names.insert(0, f"tag:{generate.GROUP_VIEW_TAG}")
    else:
        names[:0] = standing_views
    return ["--exclude", *names] if names else []


def record_built(project_dir: Path, wanted: dict[str, str], result: Any) -> bool:
    """Note the views and seeds a build created (from dbt's result) as standing, as now.

    ``wanted``: their fingerprints. Returns whether the build created any.
    """
    results = getattr(getattr(result, "result", None), "results", None) or []
    built = {
        node_result.node.name
        for node_result in results
        if str(node_result.status) == "success" and node_result.node.name in wanted
    }
    if not built:
        return False
    recorded = _recorded(project_dir) | {name: wanted[name] for name in built}
    target = project_dir / RECORD
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(recorded, indent=1, sort_keys=True), encoding="utf-8")
    return True
