"""What every command that runs table-dates does first, once: :func:`prepare`.

Find the project, check that its models are those of ``tables/`` and that the named tables
exist, take the active ones (the selected, less the paused), work from the project's
folder, open the Spark session and a folder for the command's dbt log. ``hashcdc run``,
``replay`` and ``stream`` start so; the first two then hold the tables' locks
(:meth:`Work.locked`).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hashcdc.codegen import generate
from hashcdc.config import TableConfig, load_table_configs
from hashcdc.errors import HashcdcError
from hashcdc.groups.members import groups_of
from hashcdc.runtime.lock import table_locks
from hashcdc.runtime.project import find_project_dir, profile_output, spark_session


@dataclass(frozen=True)
class Work:
    """A prepared command: its project, configs, active tables, session and log folder."""

    project_dir: Path
    configs: list[TableConfig]
    tables: list[str]
    spark: Any
    log_dir: Path

    def locked(self) -> AbstractContextManager[Any]:
        """The active tables' locks, held while the block runs (:mod:`hashcdc.runtime.lock`)."""
        return table_locks(self.spark, self.tables, self.configs)

    def join_groups(self, target: str | None) -> list[str]:
        """Take the active tables that ran on their own into the groups their configs name.

        Before the command's first dbt invocation, which lists the schema's relations once
        (:func:`hashcdc.pipeline.evolution.joining.join_group`); returns the tables taken.
        """
        # deferred: Spark's modules load only for the commands that use them
        from hashcdc.pipeline.evolution.joining import join_group

        schema = profile_output(self.project_dir, target)["schema"]
        return [
            name
            for group in groups_of(self.configs).values()
            if any(m.name in self.tables for m in group.members)
            for name in join_group(self.spark, schema, group)
        ]


def prepare(
    project_dir: Path | None,
    selected: Sequence[str],
    target: str | None,
    command: str,
    announce: Callable[[list[TableConfig], list[str]], str] | None = None,
) -> Work:
    """The preamble of ``command`` (run, replay, stream) on the ``selected`` tables (all: none).

    ``announce``: from every config and the active tables' names, the line printed before
    Spark starts (which can take a while; none when empty); it may refuse them first (a
    ``HashcdcError``).
    """
    folder = find_project_dir(project_dir)
    configs = ensure_generated(folder, selected)
    tables = active_tables(configs, selected)
    os.chdir(folder)
    line = announce(configs, tables) if announce else ""
    if line:
        print(line, flush=True)
    spark = spark_session(folder, target)
    return Work(folder, configs, tables, spark, run_log_dir(folder, command))


def ensure_generated(project_dir: Path, names: Sequence[str]) -> list[TableConfig]:
    """Check the named tables exist and the models match tables/; returns every config."""
    tables = load_table_configs(project_dir / "tables")
    if not tables:
        raise HashcdcError(
            f"no table is configured: {project_dir / 'tables'} has no <name>.yml. Add one "
            "(README: Adding a table), or try `hashcdc demo`."
        )
    known = {t.name for t in tables}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise HashcdcError(
            f"unknown table(s) {', '.join(unknown)}; configured: {', '.join(sorted(known))}"
        )
    problems = generate.check(project_dir, tables)
    if problems:
        raise HashcdcError(
            "the models are out of date with tables/ (run `hashcdc generate` first):\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return sorted(tables, key=lambda t: t.name)


def active_tables(tables: Sequence[TableConfig], selected: Sequence[str]) -> list[str]:
    """The tables a run processes: the selected (or all) ones, less the paused ones.

    Says which tables are paused; a paused table named in ``--select`` is refused.
    """
    paused = [t for t in tables if not t.enabled]
    named_paused = [t for t in paused if t.name in selected]
    if named_paused:
        raise HashcdcError(
            f"table(s) {', '.join(t.name for t in named_paused)} paused (enabled: false in "
            f"{', '.join(t.config_file for t in named_paused)}): set enabled: true (or remove "
            "the line), run `hashcdc generate`, then run again"
        )
    if paused and not selected:
        print(f"paused, skipped: {', '.join(t.name for t in paused)} (enabled: false)")
    active = [t.name for t in tables if t.enabled and (not selected or t.name in selected)]
    if not active:
        raise HashcdcError("every table is paused (enabled: false): nothing to run")
    return active


def run_log_dir(project_dir: Path, command: str) -> Path:
    """A new folder under logs/ for one hashcdc command's dbt log (dbt.log)."""
    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    folder = project_dir / "logs" / f"{command}-{stamp}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
