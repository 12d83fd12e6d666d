"""The peers of ``hashcdc bench``: a dbt snapshot over the same landing files.

What a dbt user would pick instead of hashcdc, in two forms: ``dbt-duckdb`` (one machine)
and ``dbt-spark`` (the same Spark and Delta Lake as hashcdc, in a session of its own).
Per business date, a model loads the date's extract (typed by the table's columns) and
``dbt snapshot`` tracks it with the check strategy on all columns (deleted keys
invalidated for a full extract, kept for a delta). A change feed is first folded into a
current table (each key's latest event, replaced key by key) and that table's live keys are
snapshotted. Each date is one ``dbt build`` command line, a process of its own timed from
start to exit (the load and snapshot nodes' own times are read from its run results).
dbt-spark 1.11's snapshot fails with a list ``unique_key`` and ``hard_deletes`` (an
ambiguous ``dbt_unique_key_1``), so its models key the rows on one concatenated column.
dbt-duckdb needs the ``peer`` extra (``pip install hashcdc[peer]``).

The peers share the machine with the bench's own Spark JVM: DuckDB gets a memory limit of
:data:`PEER_MEMORY_SHARE` of the memory free when the bench starts (it spills to disk
beyond it, where its default of 80% of the machine's memory got it killed beside that JVM
at 10M rows), and the dbt-spark peer has a metastore and a Derby log of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hashcdc.codegen.generate import TEMPLATES
from hashcdc.errors import HashcdcError
from hashcdc.runtime.jars import with_table_format
from hashcdc.runtime.metastore import DERBY_LOG_OPTION
from hashcdc.runtime.project import profile_output

# The share of the memory free when a DuckDB peer is set up that DuckDB may use.
PEER_MEMORY_SHARE = 0.5

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


def _tree_rss_mib(pid: int) -> float:
    """Resident memory of a process and all its descendants (a dbt process and its JVM)."""
    children: dict[int, list[int]] = {}
    rss_kib: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            status = (entry / "status").read_text()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss_kib[int(entry.name)] = int(line.split()[1])
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        total += rss_kib.get(current, 0)
        pending.extend(children.get(current, []))
    return round(total / 1024, 1)


def meminfo_kib(field: str) -> int:
    """A field of the kernel's ``/proc/meminfo`` (``MemTotal``, ``MemAvailable``), in KiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise HashcdcError(f"/proc/meminfo reports no {field}")


class PeerFailedError(HashcdcError):
    """A peer's dbt command failed: the bench records it and goes on without that peer."""


def _exit_reason(status: int) -> str:
    if status == -9:
        return "killed by SIGKILL (out of memory, most likely)"
    if status < 0:
        return f"killed by signal {-status}"
    return f"exit status {status}"


class DbtPeer:
    """A scratch dbt project under ``root`` holding one model set per case."""

    name = ""
    figure_prefix = ""  # the prefix of the peer's figures in bench.json
    dialect = ""  # the suffix of its load and profile templates
    unique_key_column: str | None = None  # one concatenated key column, else the key list
    file_format: str | None = None  # the snapshot's file format, where the adapter needs one

    def __init__(self, root: Path, cases: list[PeerCase]) -> None:
        self.root = root
        self.cases = {case.name: case for case in cases}
        self.peak_rss_mib = 0.0  # of the largest dbt process tree so far
        self._write_project()

    def _render(self, template: str, target: Path, **context: Any) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(TEMPLATES.get_template(f"peer/{template}").render(**context))

    def _profile_context(self) -> dict[str, Any]:
        raise NotImplementedError

    def _case_context(self, case: PeerCase) -> dict[str, Any]:
        """What the dialect's load templates need beyond the case's name and landing."""
        raise NotImplementedError

    def _write_project(self) -> None:
        self._render("dbt_project.yml.j2", self.root / "dbt_project.yml")
        self._render(
            f"profiles.{self.dialect}.yml.j2",
            self.root / "profiles.yml",
            threads=os.cpu_count() or 1,
            **self._profile_context(),
        )
        for case in self.cases.values():
            names = [c["name"] for c in case.columns]
            context = {"case": case.name, "landing": case.landing, "keys": case.keys}
            context.update(self._case_context(case))
            relation = f"load_{case.name}"
            if case.extract_type == "changes":
                self._render(
                    f"load_feed.{self.dialect}.sql.j2",
                    self.root / "models" / f"load_{case.name}.sql",
                    key_expressions=", ".join(f"image.{k}" for k in case.keys),
                    image_columns=", ".join(f"image.{n}" for n in names),
                    **context,
                )
                relation = f"live_{case.name}"
                self._render(
                    "live_feed.sql.j2",
                    self.root / "models" / f"{relation}.sql",
                    case=case.name,
                    columns=names + ([self.unique_key_column] if self.unique_key_column else []),
                )
            else:
                self._render(
                    f"load_extract.{self.dialect}.sql.j2",
                    self.root / "models" / f"load_{case.name}.sql",
                    **context,
                )
            self._render(
                "snapshot.yml.j2",
                self.root / "snapshots" / f"snap_{case.name}.yml",
                case=case.name,
                relation=relation,
                unique_key=self.unique_key_column or case.keys,
                hard_deletes="ignore" if case.extract_type == "delta" else "invalidate",
                file_format=self.file_format,
            )

    def _dbt(self, *args: str) -> float:
        """Run one dbt command line of the peer project; seconds from start to exit."""
        command = [str(Path(sys.executable).parent / "dbt"), *args]
        command += ["--project-dir", str(self.root), "--profiles-dir", str(self.root)]
        command += ["--no-use-colors"]
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
        with open(self.root / "last_command.log", "w+b") as output:
            started = time.perf_counter()
            process = subprocess.Popen(
                command, cwd=self.root, env=env, stdout=output, stderr=subprocess.STDOUT
            )
            self._watch_memory(process)
            seconds = time.perf_counter() - started
            if process.returncode != 0:
                output.seek(0)
                tail = "\n".join(output.read().decode(errors="replace").splitlines()[-15:])
                raise PeerFailedError(
                    f"peer {self.name}: dbt {' '.join(args[:3])} failed "
                    f"({_exit_reason(process.returncode)}, peak {self.peak_rss_mib:,.0f} MiB):"
                    f"\n{tail}"
                )
        return seconds

    def _watch_memory(self, process: subprocess.Popen) -> None:
        """Wait for ``process``, sampling its process tree's memory (its JVM included)."""
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.5):
                self.peak_rss_mib = max(self.peak_rss_mib, _tree_rss_mib(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        process.wait()
        done.set()
        sampler.join()

    def run_date(self, case_name: str, business_date: str) -> dict[str, float]:
        """Load the case's extract of the date and snapshot it, in one ``dbt build``.

        Seconds of the whole command and of its load and snapshot nodes.
        """
        date_vars = json.dumps({"business_date": business_date})
        total = self._dbt("build", "--select", f"+snap_{case_name}", "--vars", date_vars)
        results = json.loads((self.root / "target" / "run_results.json").read_text())
        nodes = {r["unique_id"].split(".")[-1]: r["execution_time"] for r in results["results"]}
        snapshot = nodes.get(f"snap_{case_name}", 0.0)
        load = sum(seconds for node, seconds in nodes.items() if node != f"snap_{case_name}")
        return {"s": round(total, 2), "load_s": round(load, 2), "snapshot_s": round(snapshot, 2)}

    def run_all(self, business_date: str) -> float:
        """Load every case's extract of the date and snapshot it, in one ``dbt build``.

        Seconds of the whole command (``hashcdc bench --tables``: many tables in one date).
        """
        date_vars = json.dumps({"business_date": business_date})
        return round(self._dbt("build", "--vars", date_vars), 2)

    def current_rows(self, case_name: str, spark: Any) -> int:
        """Rows of the snapshot that are current (the peer's current table)."""
        raise NotImplementedError

    def current_rows_by_dbt(self, case_name: str) -> int:
        """Rows of the snapshot that are current, asked by ``dbt show`` in the peer's project.

        For a bench without a Spark session of its own (``--tables``).
        """
        snapshot = "{{ ref('snap_" + case_name + "') }}"
        query = f"select count(*) as n from {snapshot} where dbt_valid_to is null"
        self._dbt("show", "--inline", query, "--output", "json", "--log-format", "json")
        for line in (self.root / "last_command.log").read_text().splitlines():
            shown = (
                json.loads(line).get("data", {}).get("preview") if line.startswith("{") else None
            )
            if shown:
                return int(json.loads(shown)[0]["n"])
        raise PeerFailedError(f"peer {self.name}: dbt show printed no count of snap_{case_name}")


class DuckdbPeer(DbtPeer):
    """The peer on dbt-duckdb: one DuckDB file."""

    name = "dbt-duckdb"
    figure_prefix = "peer"
    dialect = "duckdb"

    def __init__(self, root: Path, cases: list[PeerCase]) -> None:
        if not available():
            raise HashcdcError(
                "hashcdc bench --peer dbt-duckdb needs dbt-duckdb: pip install 'hashcdc[peer]'"
            )
        self.database = root / "peer.duckdb"
        super().__init__(root, cases)

    def _profile_context(self) -> dict[str, Any]:
        limit = int(meminfo_kib("MemAvailable") // 1024 * PEER_MEMORY_SHARE)
        return {"database": self.database, "memory_limit": f"{limit}MiB"}

    def _case_context(self, case: PeerCase) -> dict[str, Any]:
        types = {c["name"]: DUCKDB_TYPES[c["type"]] for c in case.columns}
        return {
            "duckdb_columns": json.dumps(types).replace('"', "'"),
            "duckdb_struct": "STRUCT(" + ", ".join(f"{n} {t}" for n, t in types.items()) + ")",
        }

    def current_rows(self, case_name: str, spark: Any) -> int:
        """Rows of the snapshot that are current, asked in a process of its own.

        duckdb's Python module reports leaks on stderr when the process that imported it exits.
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


class SparkPeer(DbtPeer):
    """The peer on dbt-spark: Delta tables, hashcdc's Spark settings, its own metastore."""

    name = "dbt-spark"
    figure_prefix = "spark_peer"
    dialect = "spark"
    unique_key_column = "peer_key"
    file_format = "delta"

    def __init__(self, root: Path, cases: list[PeerCase], settings: dict[str, Any]) -> None:
        self.settings = with_table_format(settings)
        self.settings.update(
            {
                "spark.app.name": "hashcdc-bench-peer",
                "spark.sql.warehouse.dir": str(root / "warehouse"),
                "spark.hadoop.javax.jdo.option.ConnectionURL": (
                    f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
                ),
                "spark.eventLog.enabled": "false",
            }
        )
        java_options = str(self.settings.get("spark.driver.extraJavaOptions", ""))
        self.settings["spark.driver.extraJavaOptions"] = DERBY_LOG_OPTION.sub(
            f"-Dderby.stream.error.file={root / 'derby.log'}", java_options
        )
        super().__init__(root, cases)

    @classmethod
    def on_project(cls, root: Path, cases: list[PeerCase], project_dir: Path) -> SparkPeer:
        """The peer on the Spark settings of ``project_dir``'s profile (hashcdc's own)."""
        return cls(root, cases, profile_output(project_dir).get("server_side_parameters") or {})

    def _profile_context(self) -> dict[str, Any]:
        return {"settings": self.settings}

    def _case_context(self, case: PeerCase) -> dict[str, Any]:
        columns = [(c["name"], c["type"]) for c in case.columns]
        return {
            "spark_columns": ", ".join(f"{n} {t}" for n, t in columns),
            "spark_struct": "struct<" + ", ".join(f"{n}: {t}" for n, t in columns) + ">",
        }

    def current_rows(self, case_name: str, spark: Any) -> int:
        """Read from the snapshot's Delta files by the bench's session (no metastore)."""
        path = self.root / "warehouse" / "peer.db" / f"snap_{case_name}"
        return spark.read.format("delta").load(str(path)).where("dbt_valid_to is null").count()


PEERS = {peer.name: peer for peer in (DuckdbPeer, SparkPeer)}


def available() -> bool:
    """Whether dbt-duckdb is installed (the ``peer`` extra)."""
    try:
        return importlib.util.find_spec("dbt.adapters.duckdb") is not None
    except ModuleNotFoundError:  # no dbt.adapters at all
        return False
