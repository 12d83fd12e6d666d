"""The embedded metastore admits one process: a second one is told who holds it, at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hashcdc.metastore import (
    _ensure_derby_log_folder,
    embedded_metastore_dir,
    metastore_holder,
)

HOLD_LOCK = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.lockf(handle, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


def test_a_shared_metastore_is_never_probed(tmp_path: Path) -> None:
    url = f"jdbc:derby:;databaseName={tmp_path}/m;create=true"
    derby = {"spark.hadoop.javax.jdo.option.ConnectionURL": url}
    assert embedded_metastore_dir(derby) == (tmp_path / "m").resolve()
    shared = derby | {"spark.hadoop.hive.metastore.uris": "thrift://127.0.0.1:9083"}
    assert embedded_metastore_dir(shared) is None
    postgres = {"spark.hadoop.javax.jdo.option.ConnectionURL": "jdbc:postgresql://127.0.0.1/hive"}
    assert embedded_metastore_dir(postgres) is None


def test_the_holder_of_the_derby_lock_is_named(tmp_path: Path) -> None:
    database = tmp_path / "metastore_db"
    database.mkdir()
    lock_file = database / "dbex.lck"
    assert metastore_holder(database) is None  # no lock file: never booted
    lock_file.touch()
    assert metastore_holder(database) is None  # a lock file nobody holds: free
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_file)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        found = metastore_holder(database)
        assert found is not None and found.pid == holder.pid
        assert found.command and found.since
    finally:
        holder.kill()
        holder.wait()
    assert metastore_holder(database) is None


def test_a_second_process_is_refused_in_seconds_with_one_line(project: Any) -> None:
    # The test session's own Spark holds the embedded metastore the project uses.
    assert project.spark.sql("select 1 as one").first()["one"] == 1
    started = time.monotonic()
    second = subprocess.run(
        [
            sys.executable,
            "-m",
            "hashcdc.cli",
            "--project-dir",
            str(project.root),
            "query",
            "select 1",
        ],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert second.returncode != 0
    assert elapsed < 10, elapsed
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, second.stderr
    # The holder is this test process (pytest), whose Spark JVM has the database booted.
    assert f"is in use by process {os.getpid()} (pytest" in lines[0], lines[0]
    assert "its Spark JVM is process" in lines[0]
    assert "Wait for that process to finish, or use a shared metastore" in lines[0]


def test_the_folder_of_derbys_log_is_created(tmp_path: Path) -> None:
    log = tmp_path / "target" / "derby.log"
    settings = {
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={tmp_path}/m",
        "spark.driver.extraJavaOptions": f"-Dderby.stream.error.file={log} -Dother=1",
    }
    _ensure_derby_log_folder(settings)
    assert log.parent.is_dir()
