"""One run per table at a time: lock files next to the tables, in the warehouse.

``hashcdc run`` and ``hashcdc replay`` take a lock per table before dbt starts and drop it
when they end. A lock is a small JSON file ``<warehouse>/_hashcdc_locks/<table>.lock``
(a table group's members share their group's, ``_hashcdc_locks/groups/<group>.lock``:
they commit together, and a lock costs two calls to the file system, whatever its size)
created with Hadoop's create-if-absent, so it works on the local file system and on the
shared storage a cluster uses. A second run on a locked table fails at once, naming the
holder. A lock whose holder is gone (same host, process no longer running: a killed run)
is detected and cleared; a lock held from another host cannot be checked from here, so the
message says how to clear it by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hashcdc.config import TableConfig
from hashcdc.errors import HashcdcError
from hashcdc.runtime.hadoop import HadoopFiles
from hashcdc.runtime.metastore import process_stat

LOCK_FOLDER = "_hashcdc_locks"
# A group's lock, apart from the tables' (a group may share a table's name).
GROUP_FOLDER = "groups"


@dataclass(frozen=True, order=True)
class Locked:
    """What one lock file holds: a table of its own, or a table group (all its members)."""

    name: str
    group: bool = False

    @property
    def file(self) -> str:
        """The lock file's path in the lock folder."""
        return f"{GROUP_FOLDER}/{self.name}.lock" if self.group else f"{self.name}.lock"

    def __str__(self) -> str:
        return f"group '{self.name}'" if self.group else f"table '{self.name}'"


def locks_of(tables: Sequence[str], configs: Sequence[TableConfig] = ()) -> list[Locked]:
    """The locks a command on ``tables`` takes: a member of a group takes its group's."""
    groups = {c.name: c.group for c in configs if c.group is not None}
    return sorted({Locked(groups[t], True) if t in groups else Locked(t) for t in tables})


def _process_start(pid: int) -> str | None:
    """The start time of a process (clock ticks since boot), or None if it is not running.

    Together with the pid it identifies a process: a pid reused by a later process has
    another start time.
    """
    fields = process_stat(pid)
    return fields[19] if fields else None


def _holder() -> dict[str, Any]:
    pid = os.getpid()
    return {
        "host": socket.gethostname(),
        "pid": pid,
        "process_start": _process_start(pid),
        "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def holder_is_gone(holder: dict[str, Any]) -> bool:
    """Whether a lock's holder process has ended (only decidable on the same host)."""
    if holder.get("host") != socket.gethostname():
        return False
    start = _process_start(int(holder.get("pid", -1)))
    return start is None or start != holder.get("process_start")


class _LockFiles:
    """Hadoop file system access to the lock folder of the session's warehouse."""

    def __init__(self, spark: Any) -> None:
        self.hadoop = HadoopFiles.of(spark)
        self.folder = self.hadoop.path(spark.conf.get("spark.sql.warehouse.dir"), LOCK_FOLDER)
        self.fs = self.hadoop.filesystem(self.folder)

    def path(self, table: Locked) -> Any:
        return self.hadoop.path(self.folder.toString(), table.file)

    def create(self, table: Locked, content: str) -> bool:
        """Create the lock file; False when it exists already."""
        try:
            stream = self.fs.create(self.path(table), False)
        except Exception as exc:  # py4j wraps the JVM's FileAlreadyExistsException
            if "FileAlreadyExistsException" in str(exc) or self.fs.exists(self.path(table)):
                return False
            raise
        try:
            stream.write(bytearray(content.encode("utf-8")))
        finally:
            stream.close()
        return True

    def read(self, table: Locked) -> dict[str, Any]:
        text = self.hadoop.first_line(self.path(table).toString()) or "{}"
        try:
            return json.loads(text)
        except ValueError:
            return {}

    def delete(self, table: Locked) -> None:
        self.fs.delete(self.path(table), False)


@contextmanager
def table_locks(
    spark: Any, tables: Sequence[str], configs: Sequence[TableConfig] = ()
) -> Iterator[None]:
    """Hold the locks of ``tables`` for the duration of the block.

    ``configs``: the project's tables, whose groups say which of ``tables`` share a lock
    (:func:`locks_of`); a table not among them takes a lock of its own.

    Raises
    ------
    HashcdcError
        When another running process holds one of them (nothing is locked then).

    """
    files = _LockFiles(spark)
    holder = json.dumps(_holder())
    taken: list[Locked] = []
    try:
        for table in locks_of(tables, configs):
            if not files.create(table, holder):
                found = files.read(table)
                if not holder_is_gone(found):
                    raise HashcdcError(
                        f"{table} is being processed by another run (pid "
                        f"{found.get('pid')} on {found.get('host')}, since "
                        f"{found.get('since')}); nothing was done. Wait for it to finish. If "
                        f"no run is active, delete {files.path(table)} and retry."
                    )
                print(
                    f"hashcdc: cleared the lock of {table} left by a run that ended "
                    f"without releasing it (pid {found.get('pid')}, since {found.get('since')})"
                )
                files.delete(table)
                if not files.create(table, holder):
                    raise HashcdcError(f"{table} was locked by another run just now")
            taken.append(table)
        yield
    finally:
        for table in taken:
            files.delete(table)
