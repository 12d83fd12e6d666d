"""Servers the integration tests start on 127.0.0.1 and always stop: PostgreSQL, Spark.

Each is a context manager: the server runs inside the ``with`` block and is stopped when
the block ends, also when a test in it fails. Folders live under the system's temporary
folder (readable by the ``postgres`` user PostgreSQL runs as when the tests run as root).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The broker and the process helpers live in the package: `hashcdc bench` starts a broker too.
from hashcdc.runtime.local_servers import (  # noqa: F401 - the tests import them from here
    LOOPBACK,
    KafkaBroker,
    free_port,
    kafka_broker,
    stop_group,
    wait_until,
)

METASTORE_DATABASE = "metastore"
METASTORE_USER = "hashcdc"
JDBC_JAR = Path("/usr/share/java/postgresql.jar")


# -- PostgreSQL ---------------------------------------------------------------------------


def postgres_bindir() -> Path:
    """Where initdb and pg_ctl are: ``pg_config --bindir``, else the newest Debian install."""
    if shutil.which("pg_config"):
        found = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if found and (Path(found) / "initdb").exists():
            return Path(found)
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not installed:
        raise RuntimeError("no PostgreSQL server binaries (initdb): install postgresql")
    return installed[-1].parent


@dataclass(frozen=True)
class Postgres:
    """A running private PostgreSQL server and its metastore database."""

    port: int
    folder: Path
    as_user: tuple[str, ...] | list[str] = ()
    options: str = ""  # the server's settings (pg_ctl -o)

    def restart(self) -> None:
        """Stop the server (fast: clients are disconnected) and start it again."""
        self._pg_ctl("-m", "fast", "-w", "restart")

    def crash(self, pause: float) -> None:
        """Stop the server abruptly (``-m immediate``: no checkpoint), start it after ``pause``.

        It recovers from its log on the start, as after a power cut of the server alone.
        """
        self.stop()
        time.sleep(pause)
        self.start()

    def stop(self) -> None:
        """Stop the server abruptly (``-m immediate``), as a crash of the server alone."""
        self._pg_ctl("-m", "immediate", "-w", "stop")

    def start(self) -> None:
        """Start the server again (it recovers from its log)."""
        self._pg_ctl("-w", "-o", self.options, "start")

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.as_user, str(postgres_bindir() / "pg_ctl"), "-D", str(self.folder / "data"),
             "-l", str(self.folder / "server.log"), *args],
            check=True, capture_output=True, text=True,
        )  # fmt: skip

    @property
    def metastore_url(self) -> str:
        return f"jdbc:postgresql://{LOOPBACK}:{self.port}/{METASTORE_DATABASE}"

    def psql(self, sql: str, database: str = METASTORE_DATABASE) -> str:
        """Run SQL with psql as the server's user; its output (unaligned, no headers)."""
        done = subprocess.run(
            [str(postgres_bindir() / "psql"), "-h", LOOPBACK, "-p", str(self.port), "-U",
             METASTORE_USER, "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"psql: {done.stderr}")
        return done.stdout

    def environment(self) -> dict[str, str]:
        """The variables that point the ``shared`` and ``cluster`` targets at it."""
        return {
            "HASHCDC_METASTORE_URL": self.metastore_url,
            "HASHCDC_METASTORE_USER": METASTORE_USER,
            "HASHCDC_METASTORE_PASSWORD": "",
            "HASHCDC_JDBC_JAR": str(JDBC_JAR),
        }


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """initdb in a temporary folder, started on a free loopback port, stopped at the end."""
    bindir = postgres_bindir()
    folder = Path(tempfile.mkdtemp(prefix="hashcdc_pg_"))
    # PostgreSQL refuses to run as root: as root, run it as the `postgres` user.
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    log = folder / "server.log"

    def pg(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, text=True)

    try:
        pg(str(bindir / "initdb"), "-D", str(data), "-U", METASTORE_USER, "--auth=trust",
           "-E", "UTF8", "--no-sync")  # fmt: skip
        # Logical decoding on: `hashcdc capture` streams from this server too.
        options = (
            f"-h {LOOPBACK} -p {port} -k {folder} -c fsync=off -c wal_level=logical "
            "-c max_replication_slots=16 -c max_wal_senders=16"
        )
        pg(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-o", options,
           "start")  # fmt: skip
        pg(str(bindir / "createdb"), "-h", LOOPBACK, "-p", str(port), "-U", METASTORE_USER,
           METASTORE_DATABASE)  # fmt: skip
        yield Postgres(port, folder, as_user, options)
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True,
                check=False,
            )
        shutil.rmtree(folder, ignore_errors=True)


# -- MariaDB ------------------------------------------------------------------------------

MARIADB_USER = "hashcdc"


def mariadb_binaries() -> tuple[str, str, str]:
    """mariadb-install-db, mariadbd and the mariadb client (Debian's mariadb-server)."""
    found = [shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
             for name in ("mariadb-install-db", "mariadbd", "mariadb")]  # fmt: skip
    if not all(found):
        raise RuntimeError("no MariaDB server binaries (mariadbd): install mariadb-server")
    return found[0], found[1], found[2]  # type: ignore[return-value]


@dataclass
class MariaDB:
    """A running private MariaDB server with its binary log in row format."""

    port: int
    folder: Path
    process: subprocess.Popen | None = None
    command: tuple[str, ...] = ()

    def sql(self, statement: str, database: str | None = None) -> str:
        """Run SQL with the client as the test user; its output (tab-separated, no headers)."""
        client = mariadb_binaries()[2]
        done = subprocess.run(
            [client, "--no-defaults", "-h", LOOPBACK, "-P", str(self.port), "-u", MARIADB_USER,
             "--batch", "--skip-column-names", *([database] if database else []),
             "-e", statement],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"mariadb: {done.stderr}")
        return done.stdout

    def start(self) -> None:
        """Start the server and wait until it answers."""
        log = (self.folder / "server.log").open("a")
        self.process = subprocess.Popen(
            list(self.command), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

        def answers() -> bool:
            assert self.process is not None and self.process.poll() is None, (
                self.folder / "server.log"
            ).read_text()[-2000:]
            try:
                self.sql("select 1")
            except RuntimeError:
                return False
            return True

        wait_until(answers, 60, "MariaDB answering")

    def stop(self) -> None:
        """Stop the server (SIGTERM: a clean shutdown)."""
        if self.process is not None:
            stop_group(self.process, seconds=60)

    def restart(self) -> None:
        """Stop the server and start it again (clients are disconnected)."""
        self.stop()
        self.start()

    def crash(self, pause: float) -> None:
        """SIGKILL the server, start it after ``pause`` (it recovers on the start)."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        time.sleep(pause)
        self.start()


@contextmanager
def mariadb_server() -> Iterator[MariaDB]:
    """A MariaDB server in a temporary folder on a free loopback port, stopped at the end.

    The binary log is on, in row format with full row images and full metadata (column
    names in the log): what ``hashcdc capture`` needs.
    """
    install, server, client = mariadb_binaries()
    folder = Path(tempfile.mkdtemp(prefix="hashcdc_mariadb_"))
    as_root = os.geteuid() == 0
    if as_root:
        shutil.chown(folder, "mysql")
    data, socket_path, port = folder / "data", folder / "mariadb.sock", free_port()
    user = ["--user=mysql"] if as_root else []
    subprocess.run(
        [install, "--no-defaults", f"--datadir={data}", *user, "--skip-test-db",
         "--auth-root-authentication-method=socket"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    running = MariaDB(port, folder, command=(
        server, "--no-defaults", f"--datadir={data}", *user, f"--port={port}",
        f"--bind-address={LOOPBACK}", f"--socket={socket_path}", f"--pid-file={folder}/pid",
        f"--log-bin={folder}/binlog", "--server-id=1", "--binlog-format=ROW",
        "--binlog-row-image=FULL", "--binlog-row-metadata=FULL", "--skip-name-resolve",
        "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0",
    ))  # fmt: skip
    try:
        log = (folder / "server.log").open("a")
        running.process = subprocess.Popen(
            list(running.command), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

        def socket_answers() -> bool:
            done = subprocess.run(
                [client, "--no-defaults", f"--socket={socket_path}", "-u", "root", "-e",
                 f"create user if not exists {MARIADB_USER}@'{LOOPBACK}'; grant all on *.* to "
                 f"{MARIADB_USER}@'{LOOPBACK}' with grant option"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            return done.returncode == 0

        wait_until(socket_answers, 60, "MariaDB's first start")
        yield running
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


# -- Spark standalone ---------------------------------------------------------------------


@dataclass
class SparkStandalone:
    """A running standalone master and its workers."""

    master_url: str
    web_url: str
    processes: list[subprocess.Popen]

    def state(self) -> dict[str, Any]:
        """The master's JSON status: workers, running and completed applications."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as response:
            return json.load(response)


@contextmanager
def spark_standalone(
    workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[SparkStandalone]:
    """A master and ``workers`` workers from the pyspark distribution, on 127.0.0.1."""
    from pyspark.find_spark_home import _find_spark_home

    spark_home = Path(_find_spark_home())
    folder = Path(tempfile.mkdtemp(prefix="hashcdc_spark_"))
    env = os.environ | {
        "SPARK_HOME": str(spark_home),
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOG_DIR": str(folder / "logs"),
        "SPARK_NO_DAEMONIZE": "1",
    }
    spark_class = str(spark_home / "bin" / "spark-class")
    master_port, web_port = free_port(), free_port()
    cluster = SparkStandalone(
        f"spark://{LOOPBACK}:{master_port}", f"http://{LOOPBACK}:{web_port}", []
    )

    def start(name: str, *args: str) -> None:
        log = (folder / f"{name}.log").open("w")
        cluster.processes.append(
            subprocess.Popen(
                [spark_class, *args],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        )

    def alive_workers() -> int:
        try:
            return int(cluster.state().get("aliveworkers", 0))
        except OSError:
            return 0

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
              "--port", str(master_port), "--webui-port", str(web_port))  # fmt: skip
        for number in range(1, workers + 1):
            start(f"worker{number}", "org.apache.spark.deploy.worker.Worker", "--host",
                  LOOPBACK, "--cores", str(cores), "--memory", memory, "--webui-port",
                  str(free_port()), "--work-dir", str(folder / f"work{number}"),
                  cluster.master_url)  # fmt: skip
        wait_until(lambda: alive_workers() >= workers, 120, f"{workers} Spark workers")
        yield cluster
    finally:
        for process in reversed(cluster.processes):
            stop_group(process)
        shutil.rmtree(folder, ignore_errors=True)


# -- hashcdc processes --------------------------------------------------------------------


def hashcdc_environment(warehouse: str, target: str, **extra: str) -> dict[str, str]:
    """The environment of a ``hashcdc`` process on ``target`` and its own warehouse.

    The test session's own settings (its embedded metastore and warehouse) are left out;
    its engines' folder stays (so that :func:`stop_engines` finds the engines started).
    The engine is on, as for a user: ``HASHCDC_ENGINE="off"`` in ``extra`` for a test whose
    subject is a process of its own.
    """
    repo = Path(__file__).resolve().parents[2]
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("HASHCDC_")}
    return inherited | {
        "HASHCDC_ENGINE_DIR": os.environ["HASHCDC_ENGINE_DIR"],
        "HASHCDC_TARGET": target,
        "HASHCDC_WAREHOUSE_DIR": warehouse,
        "HASHCDC_LOG4J2": str(repo / "profiles" / "log4j2.properties"),
        "HASHCDC_DRIVER_MEMORY": "1g",
        "HASHCDC_SHUFFLE_PARTITIONS": "2",
        "HASHCDC_LOCAL_MASTER": "local[1]",
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "TZ": "UTC",
        **extra,
    }


def _start(command: list[str], project_dir: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start a command in the project folder, in a session of its own; text pipes."""
    return subprocess.Popen(
        command,
        env=env,
        cwd=project_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def hashcdc(project_dir: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    """Start ``hashcdc --project-dir project_dir args...``."""
    command = [sys.executable, "-m", "hashcdc.cli", "--project-dir", str(project_dir), *args]
    return _start(command, project_dir, env)


def dbt(project_dir: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    """Start the ``dbt`` of this environment on the project, as a user would."""
    folders = ["--project-dir", str(project_dir), "--profiles-dir", str(project_dir / "profiles")]
    return _start([str(Path(sys.executable).parent / "dbt"), *args, *folders], project_dir, env)


def generate_tables(
    spark: Any,
    project_dir: Path,
    landing: str,
    tables: dict[str, str],
    dates: list[str],
    records: int,
) -> None:
    """Synthetic extracts of ``tables`` (name: extract type) under ``landing``, and models."""
    from hashcdc.codegen import datagen, generate
    from hashcdc.config import load_table_configs

    for table, extract_type in tables.items():
        options = datagen.DatagenOptions(
            table_name=table,
            initial_records=records,
            dates=dates,
            seed=5,
            extract_type=extract_type,
            output=f"{landing}/{table}",
        )
        datagen.generate_extracts(spark, options, project_dir)
    generate.write(project_dir, load_table_configs(project_dir / "tables"))


def finish(process: subprocess.Popen, seconds: float = 600) -> tuple[int, str, str]:
    """Wait for a process (stopping it after ``seconds``): exit status, stdout, stderr."""
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        stop_group(process)
        out, err = process.communicate()
    return process.returncode, out, err


class Lines(threading.Thread):
    """The lines a process writes to its standard output, collected as they come."""

    def __init__(self, process: Any) -> None:
        super().__init__(daemon=True)
        self.process = process
        self.lines: list[str] = []
        self.start()

    def run(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)


def query_rows(project_dir: Path, env: dict[str, str], sql: str) -> list[list[str]]:
    """The rows of a ``hashcdc query`` (its CSV without the header), each a list of texts."""
    status, out, err = finish(hashcdc(project_dir, env, "query", sql), 300)
    assert status == 0, err[-2000:]
    return [line.split(",") for line in out.strip().splitlines()[1:]]


def snapshot_sql(relations: list[str]) -> str:
    """One query returning every row of ``relations`` as (relation, JSON of the row)."""
    return " union all ".join(
        f"select '{r}' as relation, to_json(struct(*)) as row from {r}" for r in relations
    )


def parse_snapshot(csv_text: str) -> list[tuple[str, str]]:
    """The sorted (relation, row) pairs of a ``hashcdc query`` of :func:`snapshot_sql`."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(csv_text)))
    assert rows and rows[0] == ["relation", "row"], csv_text[:500]
    return sorted((relation, row) for relation, row in rows[1:])


# -- Failures and load --------------------------------------------------------------------


class LoopbackProxy:
    """A TCP proxy on 127.0.0.1 to a local server's port; :meth:`cut` drops its connections.

    A client pointed at :attr:`port` reaches the server as before; a cut closes both ends
    of every open connection at once, as a network failure mid-transfer would, and new
    connections are served again right after.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server((LOOPBACK, 0))
        self.port = int(self.listener.getsockname()[1])
        self.open: set[socket.socket] = set()
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            try:
                upstream = socket.create_connection((LOOPBACK, self.target_port), timeout=10)
            except OSError:  # the server is down: the client is refused, as without a proxy
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.open |= {client, upstream}
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, target):
                self._close(end)

    def _close(self, end: socket.socket) -> None:
        with self.lock:
            self.open.discard(end)
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
        end.close()

    def cut(self) -> int:
        """Close every open connection (both ends); how many were open."""
        with self.lock:
            ends = list(self.open)
        for end in ends:
            self._close(end)
        return len(ends) // 2

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self.closed = True
        self.listener.close()
        self.cut()


class Workload(threading.Thread):
    """Commits small transactions in a loop until stopped, through server restarts.

    ``connect`` opens a DB-API connection; ``transaction(n)`` gives the statements of the
    n-th transaction. A lost connection is opened again after a short pause; a transaction
    that fails is rolled back (or lost with its connection) and not counted. The test
    checks the source's own log of committed changes; ``acknowledged`` (commits the client
    saw succeed) is a floor for it.
    """

    def __init__(self, connect: Any, transaction: Any) -> None:
        super().__init__(daemon=True)
        self.connect = connect
        self.transaction = transaction
        self.acknowledged = 0
        self.failed = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        number, connection = 0, None
        while not self.stopping.is_set():
            try:
                if connection is None:
                    connection = self.connect()
                with contextlib.closing(connection.cursor()) as cursor:
                    for statement in self.transaction(number):
                        cursor.execute(statement)
                connection.commit()
                self.acknowledged += 1
            except Exception:  # noqa: BLE001 - any failure: the server went away
                self.failed += 1
                with contextlib.suppress(Exception):
                    connection.close()  # type: ignore[union-attr]
                connection = None
                self.stopping.wait(0.2)
            number += 1
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()

    def stop(self) -> None:
        """Stop after the transaction under way, and wait."""
        self.stopping.set()
        self.join(timeout=60)


def engine_pids(folder: Path) -> list[int]:
    """The pids of the engines recorded in an engines' folder (running or not)."""
    pids = []
    for record in folder.glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            pids.append(int(json.loads(record.read_text())["pid"]))
    return pids


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not): hashcdc's own check."""
    from hashcdc.runtime.metastore import process_running

    return process_running(pid)


def models_begun(project_dir: Path, model: str) -> int:
    """How many times ``model`` started, by the dbt logs of the project's commands."""
    logs = "".join(p.read_text(errors="replace") for p in project_dir.glob("logs/*/dbt.log"))
    return sum(1 for line in logs.splitlines() if " START " in line and f".{model} " in line)


def kill_the_engine_when(
    engines_dir: Path, client: Lines, ready: Callable[[], bool], what: str
) -> None:
    """SIGKILL the folder's one live engine once ``ready``; its client says it ended."""
    [engine] = [pid for pid in engine_pids(engines_dir) if alive(pid)]
    deadline = time.monotonic() + 300
    while not ready():
        assert time.monotonic() < deadline, f"no {what} in 300 s:\n{client.text()}"
        time.sleep(0.02)
    os.kill(engine, signal.SIGKILL)
    status, err = client.process.wait(120), client.process.stderr.read()
    assert status != 0 and "the engine ended" in err, err[-2000:]


def stop_engines(folder: Path, seconds: float = 60) -> None:
    """Stop every engine of the folder: SIGTERM (it finishes, stops Spark), then SIGKILL."""
    pids = [pid for pid in engine_pids(folder) if alive(pid)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    for pid in pids:
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for record in folder.glob("*"):
        if record.suffix in (".json", ".sock"):
            record.unlink(missing_ok=True)
