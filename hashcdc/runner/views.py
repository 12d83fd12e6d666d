"""The views of table groups stand from date to date: a date's build leaves them out.

A group's views (its current view, each member's current, history, scd2 and rejects) are
definitions over the group's tables, not data: no date changes them, yet dbt re-creates
each view it builds (0.1-0.3 s a node here: 400 nodes for a group of 100 tables). So a
date's build excludes every group view that the catalog has and that was last built from
the file generated now; a view whose file changed (a config did) or that the catalog
lacks is built with the date. The files' fingerprints of the views last built are kept
in ``target/hashcdc_views.json`` (gone with ``dbt clean``: the views are then built once
again).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hashcdc.codegen import generate
from hashcdc.config import TableConfig
from hashcdc.state.versions import relation_names

RECORD = Path("target") / "hashcdc_views.json"


def fingerprints(tables: list[TableConfig]) -> dict[str, str]:
    """Every group view of the project by name, with its generated file's fingerprint.

    Rendered once a command (rendering every group's files is 0.3 s for 100 tables).
    """
    return {
        name: hashlib.sha256(text.encode("utf-8")).hexdigest()
        for name, text in generate.group_views(tables).items()
    }


def _recorded(project_dir: Path) -> dict[str, str]:
    try:
        found = json.loads((project_dir / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def standing_views(spark: Any, project_dir: Path, wanted: dict[str, str]) -> list[str]:
    """The group views a date's build need not create: built from today's files, there.

    ``wanted``: the views' :func:`fingerprints`.
    """
    if not wanted:
        return []
    recorded = _recorded(project_dir)
    unchanged = [name for name, print_ in wanted.items() if recorded.get(name) == print_]
    if not unchanged:
        return []
    existing = relation_names(spark, spark.catalog.currentDatabase())
    return sorted(name for name in unchanged if name in existing)


def excluded(standing: list[str], every_view: list[str]) -> list[str]:
    """Dbt ``--exclude`` arguments that leave the standing views out of a date's build.

    One tag when every group view stands (each name is one more pass of dbt's selector over
    the graph: seconds a date for a group of 100 tables), else their names.
    """
    if not standing:
        return []
    if standing == every_view:
        return ["--exclude", f"tag:{generate.GROUP_VIEW_TAG}"]
    return ["--exclude", *standing]


def record_built(project_dir: Path, wanted: dict[str, str], result: Any) -> None:
    """Note the group views a build created (from dbt's result) as standing, as generated.

    ``wanted``: the views' :func:`fingerprints`.
    """
    results = getattr(getattr(result, "result", None), "results", None) or []
    built = {
        node_result.node.name
        for node_result in results
        if str(node_result.status) == "success" and node_result.node.name in wanted
    }
    if not built:
        return
    recorded = _recorded(project_dir) | {name: wanted[name] for name in built}
    target = project_dir / RECORD
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(recorded, indent=1, sort_keys=True), encoding="utf-8")
