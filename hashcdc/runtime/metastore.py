"""The embedded Derby metastore admits one process: say who holds it before Spark starts.

Spark's embedded Hive metastore is a Derby database in a folder (``metastore_db``). Derby
holds an exclusive lock on its ``dbex.lck`` file while a JVM has the database booted, and
a second JVM fails only after a minute of start-up, with thousands of lines of stack
traces. Derby's lock alone cannot guard a process: it is taken only once the JVM has
started and booted the database, tens of seconds after the process began. So
:func:`ensure_metastore_free` first takes a lock of hashcdc's own, ``<metastore>.lock``
beside the database folder, before Spark starts, and holds it for the life of the process
(an ``flock``, released by the kernel whatever way the process ends). The file names its
holder (pid, command, start) and whether it is on its way out: a process that is
stopping its JVM marks the file ``exiting``, and a newcomer waits for it (a few seconds)
instead of failing. Then Derby's own lock is tried too (a POSIX record lock, as Java's
``FileChannel.tryLock`` takes it), for a JVM whose Python process is gone or a process
that is not hashcdc's; its holder is named from ``/proc/locks``.

A shared metastore on a server: :mod:`hashcdc.runtime.shared_metastore`.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from hashcdc.errors import HashcdcError

HADOOP_PREFIX = "spark.hadoop."
CONNECTION_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
METASTORE_URIS = "spark.hadoop.hive.metastore.uris"
DERBY_LOCK_FILE = "dbex.lck"
# hashcdc's own lock, beside the database folder: <folder>.lock.
PROCESS_LOCK_SUFFIX = ".lock"
# How long a newcomer waits for a holder that is stopping (its JVM shuts Derby down).
EXITING_WAIT_SECONDS = 30.0
POLL_SECONDS = 0.1
# A holder writes its record right after taking the lock, and again when its JVM starts.
RECORD_READ_SECONDS = 2.0
RECORD_READ_POLL_SECONDS = 0.02
# How much of the holder's command line the message shows.
COMMAND_WIDTH = 160
_DERBY_DATABASE = re.compile(r"^jdbc:derby:.*databaseName=([^;]+)")
# The JVM option that names Derby's log file (a peer of the bench points it at its own).
DERBY_LOG_OPTION = re.compile(r"-Dderby\.stream\.error\.file=(\S+)")


class MetastoreBusyError(HashcdcError):
    """The embedded metastore is in use by another process."""


@dataclass(frozen=True)
class Holder:
    """The process holding a lock: its id, command line and start time (when known).

    ``exiting``: the holder is on its way out (it marked its lock so, or it is a Spark JVM
    whose Python process has ended): the lock is released within seconds.
    """

    pid: int | None
    command: str = ""
    since: str = ""
    exiting: bool = False

    def describe(self) -> str:
        """The holder in words: ``process 123 (java … SparkSubmit …, since …)``."""
        if self.pid is None:
            return "another process"
        details = ", ".join(
            part for part in (self.command, self.since and f"since {self.since}") if part
        )
        return f"process {self.pid}" + (f" ({details})" if details else "")


def embedded_metastore_dir(settings: dict[str, Any] | None) -> Path | None:
    """The Derby database folder a profile's settings use, or None (a shared metastore)."""
    settings = settings or {}
    if str(settings.get(METASTORE_URIS) or "").strip():
        return None
    match = _DERBY_DATABASE.match(str(settings.get(CONNECTION_URL) or ""))
    return Path(match.group(1)).resolve() if match else None


def metastore_holder(database: Path) -> Holder | None:
    """The process that has the Derby database booted, or None when it is free."""
    lock_file = database / DERBY_LOCK_FILE
    if not lock_file.is_file():
        return None
    with lock_file.open("a") as handle:
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return _lock_holder(lock_file)
        fcntl.lockf(handle, fcntl.LOCK_UN)
    return None


def _lock_holder(lock_file: Path) -> Holder:
    """Who holds a POSIX lock on a file, from ``/proc/locks`` (Linux); else unknown."""
    inode = lock_file.stat().st_ino
    try:
        lines = Path("/proc/locks").read_text(encoding="ascii").splitlines()
    except OSError:
        return Holder(None)
    for line in lines:
        fields = line.split()
        if len(fields) > 5 and fields[5].rsplit(":", 1)[-1] == str(inode):
            return _process(int(fields[4]))
    return Holder(None)


# The interpreter's own options that take a value (python -X dev, -W error, …).
PYTHON_VALUE_OPTIONS = frozenset({"-X", "-W"})


def _program(words: list[str]) -> str:
    """A Python process's program (hashcdc, dbt, pytest) and its arguments.

    The interpreter's options are left out (``python -u -m hashcdc.cli …`` is hashcdc); a
    program given as ``-c`` code (a pytest-xdist worker's) is ``python -c <code>``.
    """
    rest = words[1:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        rest = rest[2:] if rest[0] in PYTHON_VALUE_OPTIONS else rest[1:]
    if len(rest) > 1 and rest[0] == "-m":  # python -m hashcdc.cli …
        program = [rest[1].split(".")[0], *rest[2:]]
    elif rest and rest[0] == "-c":
        program = ["python", *rest]
    else:
        program = [Path(rest[0]).name, *rest[1:]] if rest else []
    return " ".join(program)[:COMMAND_WIDTH]


def _process(pid: int) -> Holder:
    """A process's command and start time; for PySpark's JVM, the Python program behind it.

    A Spark JVM whose Python process has ended is exiting: PySpark's JVM stops when the
    standard input its Python process held is closed.
    """
    words, started = _command_line(pid)
    if words is None:
        return Holder(pid)
    if not words or not process_running(pid):
        # An ending process: the kernel has let go of its memory (its command line reads
        # empty) but not yet of its files and locks; it releases them within moments.
        return Holder(pid, "a process that is ending", started, True)
    if Path(words[0]).name == "java":
        parent = _parent(pid)
        parent_words, parent_started = _command_line(parent) if parent else (None, "")
        if parent_words and "python" in Path(parent_words[0]).name:
            command = f"{_program(parent_words)}; its Spark JVM is process {pid}"
            return Holder(parent, command, parent_started)
        is_pyspark = any("pyspark-shell" in word for word in words)
        if is_pyspark:
            return Holder(pid, "a Spark JVM whose Python process has ended", started, True)
    return Holder(
        pid, " ".join(Path(w).name for w in words[:1]) + " " + " ".join(words[1:3]), started
    )


def _command_line(pid: int) -> tuple[list[str] | None, str]:
    """A process's arguments and start time (None when it is gone or unreadable)."""
    proc = Path(f"/proc/{pid}")
    try:
        argv = (proc / "cmdline").read_bytes().split(b"\0")
        started = dt.datetime.fromtimestamp(proc.stat().st_mtime).strftime("%Y-%m-%d %H:%M:%S")
    except OSError:
        return None, ""
    return [a.decode(errors="replace") for a in argv if a], started


def process_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name; None when it is gone.

    Item 0 is the state, 1 the parent pid, 19 the start time (proc(5) field N is item N - 3).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; it ends at the last ')'.
    return stat.rsplit(")", 1)[1].split()


def process_started(pid: int | None) -> str | None:
    """When a running process started (clock ticks after boot); None when none runs.

    With the pid, it tells a process from a later one the machine gave the same pid.
    """
    fields = process_stat(int(pid)) if pid else None
    return fields[19] if fields and fields[0] != "Z" else None


def process_running(pid: int | None) -> bool:
    """Whether a process runs: it exists and is not a zombie (ended, not yet reaped)."""
    return process_started(pid) is not None


def _parent(pid: int) -> int | None:
    fields = process_stat(pid)
    return int(fields[1]) if fields else None


def _ensure_derby_log_folder(settings: dict[str, Any] | None) -> None:
    """Create the folder of Derby's log file (``target/`` on a fresh checkout).

    Derby cannot open a log file in a missing folder: it then prints a
    FileNotFoundException and its boot banner on the console instead.
    """
    options = str((settings or {}).get("spark.driver.extraJavaOptions") or "")
    match = DERBY_LOG_OPTION.search(options)
    if match:
        Path(match.group(1)).parent.mkdir(parents=True, exist_ok=True)


def process_lock_file(database: Path) -> Path:
    """The lock hashcdc holds on an embedded metastore: ``<folder>.lock`` beside its folder."""
    return database.with_name(database.name + PROCESS_LOCK_SUFFIX)


@dataclass
class _HeldLock:
    """The process lock this process holds (for its whole life, once taken)."""

    handle: IO[str]
    record: dict[str, Any]

    def mark(self, state: str) -> None:
        """Rewrite the holder record with a new state (``running`` or ``exiting``).

        The new record is written over the old one and the rest cut after it, so the file is
        never empty while held; a reader that meets a half-written record reads it again.
        """
        self.record["state"] = state
        self.handle.seek(0)
        self.handle.write(json.dumps(self.record))
        self.handle.truncate()
        self.handle.flush()


_HELD: _HeldLock | None = None


def open_lock_file(lock_file: Path) -> IO[str]:
    """Open a process lock file for rewriting in place, keeping what it holds.

    Not in append mode: there every write lands at the end, whatever the position.
    """
    return open(os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644), "r+", encoding="utf-8")


def _read_record(lock_file: Path) -> dict[str, Any]:
    """The holder record of a process lock file, read again while it is being rewritten."""
    deadline = time.monotonic() + RECORD_READ_SECONDS
    while True:
        try:
            record = json.loads(lock_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = None
        if isinstance(record, dict) and isinstance(record.get("pid"), int):
            return record
        if time.monotonic() >= deadline:
            return {}
        time.sleep(RECORD_READ_POLL_SECONDS)


def _recorded_holder(lock_file: Path) -> Holder:
    """The holder a process lock file names (unknown when it names none)."""
    record = _read_record(lock_file)
    pid = record.get("pid")
    if not isinstance(pid, int):
        return Holder(None)
    command = str(record.get("command", ""))
    if record.get("jvm_pid"):
        command += f"; its Spark JVM is process {record['jvm_pid']}"
    # A process that is gone: the kernel releases its lock as it ends (on its way out).
    exiting = process_stat(pid) is None or record.get("state") == "exiting"
    return Holder(pid, command, str(record.get("since", "")), exiting)


def _own_record() -> dict[str, Any]:
    words, _ = _command_line(os.getpid())
    return {
        "pid": os.getpid(),
        "command": _program(words or []),
        "since": dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "state": "running",
    }


def _busy(database: Path, holder: Holder) -> MetastoreBusyError:
    if "engine serve" in holder.command:
        return MetastoreBusyError(
            f"the embedded metastore {database} is held by the project's hashcdc engine "
            f"({holder.describe()}); it admits one process at a time. Send the command "
            "through the engine (without --no-engine or HASHCDC_ENGINE=off; dbt as "
            "`hashcdc dbt build …`), or stop the engine first: `hashcdc engine stop`."
        )
    return MetastoreBusyError(
        f"the embedded metastore {database} is in use by {holder.describe()}; it admits one "
        "process at a time. Wait for that process to finish, or use a shared metastore so "
        "that runs and queries can work side by side (docs/cluster.md: the shared metastore)."
    )


def _wait_while_exiting(probe: Any, database: Path, deadline: float) -> None:
    """Poll ``probe`` (the holder, or None once free) until it is free.

    Waits only while the holder is exiting, or cannot be named, and the deadline is ahead:
    a lock whose holder is not found has most often just been let go (a killed engine's
    JVM that is ending releases Derby's lock between the try and the look), and the next
    probe finds it free.
    """
    while True:
        holder = probe()
        if holder is None:
            return
        waits = holder.exiting or holder.pid is None
        if not waits or time.monotonic() >= deadline:
            raise _busy(database, holder)
        time.sleep(POLL_SECONDS)


def _take_process_lock(database: Path, deadline: float) -> _HeldLock:
    lock_file = process_lock_file(database)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    handle = open_lock_file(lock_file)

    def probe() -> Holder | None:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _recorded_holder(lock_file)
        return None

    try:
        _wait_while_exiting(probe, database, deadline)
    except MetastoreBusyError:
        handle.close()
        raise
    held = _HeldLock(handle, _own_record())
    held.mark("running")
    return held


def ensure_metastore_free(settings: dict[str, Any] | None) -> None:
    """Hold an embedded metastore for this process's life, or refuse naming its holder.

    Does nothing when this process holds it already or when the settings use a shared
    metastore. A holder that is exiting is waited for, up to
    :data:`EXITING_WAIT_SECONDS`.

    Raises
    ------
    MetastoreBusyError
        One line: the folder, the holder (pid, command, since when) and what to do.

    """
    global _HELD
    database = embedded_metastore_dir(settings)
    if database is None or _HELD is not None:
        return
    _ensure_derby_log_folder(settings)
    deadline = time.monotonic() + EXITING_WAIT_SECONDS
    held = _take_process_lock(database, deadline)
    try:
        # A JVM left by a Python process that ended, or a process that is not hashcdc's.
        _wait_while_exiting(lambda: metastore_holder(database), database, deadline)
    except MetastoreBusyError:
        held.handle.close()
        raise
    _HELD = held


def note_spark_jvm(pid: int | None) -> None:
    """Name this process's Spark JVM in the lock file (a newcomer's message shows it)."""
    if _HELD is not None and pid:
        _HELD.record["jvm_pid"] = pid
        _HELD.mark(str(_HELD.record["state"]))


def release_metastore_on_exit() -> None:
    """Say that this process is on its way out: a newcomer waits instead of failing.

    The lock itself stays until the process ends, after its JVM (and Derby) has stopped.
    """
    if _HELD is not None:
        _HELD.mark("exiting")
