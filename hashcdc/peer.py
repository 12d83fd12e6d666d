"""The peer of ``hashcdc bench``: a dbt snapshot on dbt-duckdb over the same landing files.

What a dbt user on one machine would pick instead of hashcdc: per business date, a model
loads the date's extract into DuckDB (``read_csv``, typed by the table's columns) and
``dbt snapshot`` tracks it with the check strategy on all columns (deleted keys
invalidated for a full extract, kept for a delta). A change feed is first folded into a
current table (each key's latest event, replaced key by key) and that table's live keys are
snapshotted. Both steps run as a user runs them: ``dbt`` command lines, each its own
process, timed from start to exit. Needs the ``peer`` extra (``pip install hashcdc[peer]``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hashcdc.errors import HashcdcError
from hashcdc.generate import TEMPLATES

PEER_NAME = "dbt-duckdb"
# DuckDB's names of the table column types the benchmark's tables use.
DUCKDB_TYPES = {"string": "VARCHAR", "double": "DOUBLE", "bigint": "BIGINT", "int": "INTEGER"}


@dataclass(frozen=True)
class PeerCase:
    """One table of the benchmark as the peer sees it."""

    name: str
    extract_type: str  # full, delta or changes
    landing: Path  # the folder of the table's dated extract folders
    columns: list[dict[str, Any]]  # the table config's columns

    @property
    def keys(self) -> list[str]:
        """The key columns."""
        return [c["name"] for c in self.columns if c.get("key")]


def available() -> bool:
    """Whether dbt-duckdb is installed (the ``peer`` extra)."""
    try:
        return importlib.util.find_spec("dbt.adapters.duckdb") is not None
    except ModuleNotFoundError:  # no dbt.adapters at all
        return False


class DuckdbPeer:
    """A scratch dbt-duckdb project under ``root`` holding one model set per case."""

    def __init__(self, root: Path, cases: list[PeerCase]) -> None:
        if not available():
            raise HashcdcError(
                "hashcdc bench --peer dbt-duckdb needs dbt-duckdb: pip install 'hashcdc[peer]'"
            )
        self.root = root
        self.cases = {case.name: case for case in cases}
        self.database = root / "peer.duckdb"
        self.peak_rss_mib = 0.0  # of the largest dbt process so far
        self._write_project()

    def _render(self, template: str, target: Path, **context: Any) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(TEMPLATES.get_template(f"peer/{template}").render(**context))

    def _write_project(self) -> None:
        self._render("dbt_project.yml.j2", self.root / "dbt_project.yml")
        self._render(
            "profiles.yml.j2",
            self.root / "profiles.yml",
            database=self.database,
            threads=os.cpu_count() or 1,
        )
        for case in self.cases.values():
            types = {c["name"]: DUCKDB_TYPES[c["type"]] for c in case.columns}
            names = list(types)
            relation = f"load_{case.name}"
            if case.extract_type == "changes":
                struct = "STRUCT(" + ", ".join(f"{n} {t}" for n, t in types.items()) + ")"
                self._render(
                    "load_feed.sql.j2",
                    self.root / "models" / f"load_{case.name}.sql",
                    landing=case.landing,
                    keys=case.keys,
                    duckdb_struct=struct,
                    key_expressions=", ".join(f"image.{k}" for k in case.keys),
                    image_columns=", ".join(f"image.{n}" for n in names),
                )
                relation = f"live_{case.name}"
                self._render(
                    "live_feed.sql.j2",
                    self.root / "models" / f"{relation}.sql",
                    case=case.name,
                    columns=names,
                )
            else:
                self._render(
                    "load_extract.sql.j2",
                    self.root / "models" / f"load_{case.name}.sql",
                    landing=case.landing,
                    duckdb_columns=json.dumps(types).replace('"', "'"),
                )
            self._render(
                "snapshot.yml.j2",
                self.root / "snapshots" / f"snap_{case.name}.yml",
                case=case.name,
                relation=relation,
                keys=case.keys,
                hard_deletes="ignore" if case.extract_type == "delta" else "invalidate",
            )

    def _dbt(self, *args: str) -> float:
        """Run one dbt command line of the peer project; seconds from start to exit."""
        command = [str(Path(sys.executable).parent / "dbt"), *args]
        command += ["--project-dir", str(self.root), "--profiles-dir", str(self.root)]
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
        with tempfile.TemporaryFile() as output:
            started = time.perf_counter()
            process = subprocess.Popen(
                command, cwd=self.root, env=env, stdout=output, stderr=subprocess.STDOUT
            )
            # wait4: this process's own resource use (its peak memory), not all children's.
            _, status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - started
            process.returncode = os.waitstatus_to_exitcode(status)
            self.peak_rss_mib = max(self.peak_rss_mib, round(usage.ru_maxrss / 1024, 1))
            if process.returncode != 0:
                output.seek(0)
                tail = "\n".join(output.read().decode(errors="replace").splitlines()[-15:])
                raise HashcdcError(f"peer: dbt {' '.join(args[:3])} failed:\n{tail}")
        return seconds

    def run_date(self, case_name: str, business_date: str) -> dict[str, float]:
        """Load the case's extract of the date and snapshot it; seconds of each step."""
        date_vars = json.dumps({"business_date": business_date})
        load = self._dbt("run", "--select", f"+snap_{case_name}", "--vars", date_vars)
        snapshot = self._dbt("snapshot", "--select", f"snap_{case_name}")
        return {"load_s": round(load, 2), "snapshot_s": round(snapshot, 2)}

    def current_rows(self, case_name: str) -> int:
        """Rows of the snapshot that are current (the peer's current table).

        Asked in a process of its own: duckdb's Python module reports leaks on stderr when
        the process that imported it exits.
        """
        query = f"select count(*) from main.snap_{case_name} where dbt_valid_to is null"
        script = (
            "import duckdb, sys; "
            "print(duckdb.connect(sys.argv[1], read_only=True).execute(sys.argv[2]).fetchone()[0])"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(self.database), query],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(done.stdout.strip())
