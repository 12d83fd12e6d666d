"""The embedded metastore's Derby lock: its holder named; a shared metastore never probed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from hashcdc.runtime.metastore import (
    _ensure_derby_log_folder,
    _process,
    _program,
    _recorded_holder,
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

REWRITE_RECORD = """
import fcntl, sys
from hashcdc.runtime.metastore import _HeldLock, _own_record, open_lock_file
from pathlib import Path
handle = open_lock_file(Path(sys.argv[1]))
fcntl.flock(handle, fcntl.LOCK_EX)
held = _HeldLock(handle, _own_record())
held.mark("running")
print("locked", flush=True)
for number in range(10**9):
    held.record["jvm_pid"] = number % 200 + 1
    held.mark("running")
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


def test_an_ending_holder_is_waited_for(tmp_path: Path) -> None:
    """A holder between letting go of its memory and of its locks (CI met one: a killed
    engine's JVM, named with an empty command line) is exiting, not busy."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        wait = 0
        while Path(f"/proc/{ended.pid}/cmdline").read_bytes() and wait < 500:
            time.sleep(0.01)  # not reaped: a zombie, its command line empty
            wait += 1
        holder = _process(ended.pid)
        assert holder.pid == ended.pid and holder.exiting, holder
    finally:
        ended.wait()
    running = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path / "lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert running.stdout is not None and running.stdout.readline().strip() == "locked"
        assert not _process(running.pid).exiting
    finally:
        running.kill()
        running.wait()


def test_a_record_being_rewritten_still_names_its_holder(tmp_path: Path) -> None:
    """The holder's record is never read empty or half written (CI saw "another process")."""
    lock_file = tmp_path / "metastore_db.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", REWRITE_RECORD, str(lock_file)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        for _ in range(2000):
            assert _recorded_holder(lock_file).pid == holder.pid
    finally:
        holder.kill()
        holder.wait()


def test_the_folder_of_derbys_log_is_created(tmp_path: Path) -> None:
    log = tmp_path / "target" / "derby.log"
    settings = {
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={tmp_path}/m",
        "spark.driver.extraJavaOptions": f"-Dderby.stream.error.file={log} -Dother=1",
    }
    _ensure_derby_log_folder(settings)
    assert log.parent.is_dir()


def test_a_python_holder_is_named_by_its_program_not_the_interpreter_options() -> None:
    python = "/usr/bin/python3"
    assert _program([python, "-m", "hashcdc.cli", "run"]) == "hashcdc run"
    assert _program([python, "-u", "-X", "dev", "-m", "hashcdc.cli", "query", "x"]) == (
        "hashcdc query x"
    )
    assert _program([python, "/venv/bin/pytest", "-q"]) == "pytest -q"
    assert _program([python, "-u", "-c", "import sys"]) == "python -c import sys"
    assert _program([python]) == ""
