"""Shared fixtures: one SparkSession (one warehouse, one metastore) for the whole run.

Spark start-up costs 20-40 s here, so every test shares the session that the first dbt
invocation (or the first ``spark`` use) creates, and dbt runs in-process via dbtRunner.
Each test gets a project folder of its own on that shared warehouse; tests isolate their
tables by name.
"""

from __future__ import annotations

import io
import itertools
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from time_ledger import (  # noqa: F401 - the hooks that report where the time goes
    pytest_configure,
    pytest_runtest_protocol,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_testnodedown,
)

REPO = Path(__file__).resolve().parents[1]
# A test that uses one of these needs the shared SparkSession: it is in the `spark` tier.
SPARK_FIXTURES = frozenset({"project", "spark", "session_root", "postgres", "mariadb"})

os.environ["TZ"] = "UTC"
time.tzset()
# The test process is its own warm engine (one shared SparkSession): `main([...])` runs
# here. Tests of the engine, and processes started through `hashcdc_environment`, turn it on.
os.environ["HASHCDC_ENGINE"] = "off"
# A CI time-out stops pytest with SIGTERM: exit through the fixtures' clean-up, so the
# servers the tests started (PostgreSQL, a Spark cluster) stop too.
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs Spark, so `pytest -m "not spark"` runs the unit tier."""
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def engines_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the engines the tests start (a private one, mode 0700)."""
    folder = tmp_path_factory.mktemp("engines")
    folder.chmod(0o700)
    return folder


@pytest.fixture(autouse=True)
def _engines_stopped(
    engines_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Every engine a test started is stopped when it ends, passed or failed.

    What its engines served counts in the time table (their logs in the test's folders).
    """
    from servers import stop_engines
    from time_ledger import engine_share

    monkeypatch.setenv("HASHCDC_ENGINE_DIR", str(engines_dir))
    yield
    stop_engines(engines_dir)
    engine_share([*tmp_path.glob("logs/engine.log"), *tmp_path.glob("*/logs/engine.log")])


@dataclass
class DbtOutcome:
    """What a dbt invocation reported: success and the messages of failed nodes."""

    success: bool
    messages: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join(self.messages)


class Project:
    """A hashcdc project in a temporary folder, driven like a user would."""

    def __init__(self, root: Path, schema: str) -> None:
        self.root = root
        self.schema = schema

    # -- configs and extracts -------------------------------------------------
    def add_table(self, config: dict[str, Any]) -> None:
        from hashcdc.codegen import generate
        from hashcdc.config import load_table_configs

        (self.root / "tables" / f"{config['name']}.yml").write_text(
            yaml.safe_dump(config, sort_keys=False), encoding="utf-8"
        )
        generate.write(self.root, load_table_configs(self.root / "tables"))

    def write_text(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def write_csv(
        self, relative: str, header: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> Path:
        return self.write_text(relative, csv_text(header, rows))

    # -- running --------------------------------------------------------------
    def dbt(self, command: str, *args: str, business_date: str | None = None) -> DbtOutcome:
        from hashcdc.runtime.project import dbt_args, invoke_dbt

        os.chdir(self.root)
        result = invoke_dbt(dbt_args(command, self.root, args), business_date)
        messages: list[str] = []
        statuses: dict[str, str] = {}
        if result.exception is not None:
            messages.append(str(result.exception))
        run_results = getattr(result.result, "results", None) or []
        for node_result in run_results:
            statuses[node_result.node.name] = str(node_result.status)
            if str(node_result.status) in ("error", "fail"):
                messages.append(f"{node_result.node.name}: {node_result.message}")
        return DbtOutcome(bool(result.success), messages, statuses)

    def build(self, business_date: str, *tables: str) -> DbtOutcome:
        from hashcdc.runtime.project import table_selector

        return self.dbt("build", *table_selector(tables), business_date=business_date)

    @property
    def spark(self) -> Any:
        from hashcdc.runtime.project import spark_session

        return spark_session(self.root)

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return [row.asDict() for row in self.spark.sql(sql).collect()]


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV the way hashcdc reads it: null unquoted-empty, every string quoted."""
    out = io.StringIO()
    out.write(",".join(header) + "\n")
    for row in rows:
        cells = []
        for value in row:
            if value is None:
                cells.append("")
            elif isinstance(value, str):
                cells.append('"' + value.replace('"', '""') + '"')
            else:
                cells.append(str(value))
        out.write(",".join(cells) + "\n")
    return out.getvalue()


@pytest.fixture(scope="session")
def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The warehouse and metastore every test shares (one SparkSession for the run).

    The folder is a project made by ``hashcdc new`` (the package from this checkout,
    installed by ``dbt deps``): each test's project is a copy of its files.
    """
    from hashcdc.runtime.scaffold import scratch_project

    root = tmp_path_factory.mktemp("hashcdc_session")
    os.environ.update(scratch_project(REPO, root))
    os.environ.update({"HASHCDC_LOCAL_MASTER": "local[2]", "HASHCDC_SHUFFLE_PARTITIONS": "2"})
    on_fallback_path(root / "profiles" / "profiles.yml")
    return root


# Hive's metastore answers a partition filter by direct SQL and falls back to JDO when that
# fails (at a client, a 100-table date); JDO serves no filter on a date column. The suite
# runs on the fallback path, so a date filter that reaches the metastore fails in a test.
FALLBACK_PATH = "spark.hadoop.hive.metastore.try.direct.sql"
SPARK_SETTINGS = "          spark.sql.sources.partitionOverwriteMode: dynamic\n"


def on_fallback_path(profiles: Path) -> None:
    """Turn the metastore's direct SQL off in a profile's Spark settings (every target)."""
    text = profiles.read_text(encoding="utf-8")
    assert SPARK_SETTINGS in text, f"{profiles}: the Spark settings moved; update conftest.py"
    profiles.write_text(
        text.replace(SPARK_SETTINGS, f'{SPARK_SETTINGS}          {FALLBACK_PATH}: "false"\n'),
        encoding="utf-8",
    )


# A new project's own files, which a test's project copies from the session's.
PROJECT_FILES = ("dbt_project.yml", "packages.yml", "package-lock.yml", "profiles", "dbt_packages")


def copy_project(made: Path, root: Path) -> None:
    """A project like ``made`` (its files, the installed package), without its data."""
    from hashcdc.runtime.scaffold import PROJECT_FOLDERS

    root.mkdir(exist_ok=True)
    for item in PROJECT_FILES:
        origin = made / item
        if origin.is_dir():
            shutil.copytree(origin, root / item, symlinks=True)
        else:
            shutil.copy(origin, root / item)
    for folder in PROJECT_FOLDERS:
        (root / folder).mkdir(exist_ok=True)


_schema_numbers = itertools.count(1)


@pytest.fixture
def project(session_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project folder and a schema of the test's own, on the shared warehouse and metastore.

    Each test's dbt project holds only its own tables, so dbt's parse stays small however
    many tests ran before; and its own schema keeps dbt's listing of the schema's relations
    (``show table extended``, about 5 ms a relation, at every dbt command) from growing
    with every test that ran before it.
    """
    root = tmp_path / "project"
    copy_project(session_root, root)  # the files only: the environment stays the session's
    schema = f"hashcdc_t{next(_schema_numbers):03d}"
    monkeypatch.setenv("HASHCDC_SCHEMA", schema)
    os.chdir(root)
    return Project(root, schema)


@pytest.fixture(scope="session")
def spark(session_root: Path) -> Any:
    from hashcdc.runtime.project import spark_session

    return spark_session(session_root)


@pytest.fixture(scope="session")
def mariadb() -> Iterable[Any]:
    """A private MariaDB server (binary log in row format), stopped when the run ends."""
    from servers import mariadb_server

    with mariadb_server() as server:
        yield server


@pytest.fixture(scope="session")
def kafka() -> Iterable[Any]:
    """A private single-node Kafka broker (KRaft), stopped when the run ends."""
    from servers import kafka_broker

    with kafka_broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def postgres() -> Iterable[Any]:
    """A private PostgreSQL server for shared-metastore tests, stopped when the run ends."""
    from servers import postgres_server

    with postgres_server() as server:
        yield server


@pytest.fixture
def json_rows(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The extra format of ``json_rows.py`` registered as ``inputs.register`` does, and
    unregistered after the test."""
    from json_rows import JsonRowsReader

    from hashcdc.config import schema as config_schema
    from hashcdc.pipeline import inputs

    reader = JsonRowsReader()
    monkeypatch.setitem(inputs._READERS, reader.name, reader)
    monkeypatch.setitem(config_schema._FORMATS, reader.name, reader.carries_events)
    return reader


@pytest.fixture
def manifests(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The extra transport of ``manifests.py`` registered as ``transports.register`` does,
    and unregistered after the test."""
    from manifests import Manifests

    from hashcdc.pipeline import transports

    transport = Manifests()
    monkeypatch.setitem(transports._TRANSPORTS, transport.name, transport)
    return transport
