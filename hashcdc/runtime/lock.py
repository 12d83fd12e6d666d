"""One run per table at a time: lock files next to the tables, in the warehouse.

``hashcdc run`` and ``hashcdc replay`` take a lock per table before dbt starts and drop it
when they end. A lock is a small JSON file ``<warehouse>/_hashcdc_locks/<table>.lock``
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
from typing import Any

from hashcdc.errors import HashcdcError
from hashcdc.runtime.hadoop import HadoopFiles
from hashcdc.runtime.metastore import process_stat

LOCK_FOLDER = "_hashcdc_locks"


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

    def path(self, table: str) -> Any:
        return self.hadoop.path(self.folder.toString(), f"{table}.lock")

    def create(self, table: str, content: str) -> bool:
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

    def read(self, table: str) -> dict[str, Any]:
        text = self.hadoop.first_line(self.path(table).toString()) or "{}"
        try:
            return json.loads(text)
        except ValueError:
            return {}

    def delete(self, table: str) -> None:
        self.fs.delete(self.path(table), False)


@contextmanager
def table_locks(spark: Any, tables: Sequence[str]) -> Iterator[None]:
    """Hold the locks of ``tables`` for the duration of the block.

    Raises
    ------
    HashcdcError
        When another running process holds one of them (nothing is locked then).

    """
    files = _LockFiles(spark)
    holder = json.dumps(_holder())
    taken: list[str] = []
    try:
        for table in sorted(set(tables)):
            if not files.create(table, holder):
                found = files.read(table)
                if not holder_is_gone(found):
                    raise HashcdcError(
                        f"table '{table}' is being processed by another run (pid "
                        f"{found.get('pid')} on {found.get('host')}, since "
                        f"{found.get('since')}); nothing was done. Wait for it to finish. If "
                        f"no run is active, delete {files.path(table)} and retry."
                    )
                print(
                    f"hashcdc: cleared the lock of table '{table}' left by a run that ended "
                    f"without releasing it (pid {found.get('pid')}, since {found.get('since')})"
                )
                files.delete(table)
                if not files.create(table, holder):
                    raise HashcdcError(f"table '{table}' was locked by another run just now")
            taken.append(table)
        yield
    finally:
        for table in taken:
            files.delete(table)
