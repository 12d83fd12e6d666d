"""Where captured events land, and the offsets that say how far they are landed.

Events are appended to a hidden part file per table and business date in the date's
landing folder (Spark and Hadoop skip names starting with ``_``, so a run never reads one).
A *roll* closes every part at a transaction boundary: each is flushed to disk and renamed
to its final name, which carries the position of the last transaction in it; then the
offsets file is replaced in one step (written beside it, flushed, renamed). The offsets
are the commit point: on restart, landed files past them belong to a roll that never
committed and are removed before their transactions are streamed again, so every
transaction lands exactly once.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hashcdc.config import TableConfig
from hashcdc.pipeline.evolution.schema_changes import SCHEMA_FILE_PREFIX
from hashcdc.runtime.hadoop import resolve_location

PART_PREFIX = "_capturing-"
FILE_SUFFIX = ".json"
# Beside a capture's offsets: the tables ``hashcdc capture --pause`` paused.
CONTROL_SUFFIX = ".control.json"
# The part of a table's schema-change events (landed as ``_schema-<slot>-<position>.json``).
SCHEMA_TAG = "schema"


def landing_folder(table: TableConfig, business_date: str, project_dir: Path) -> Path:
    """The local folder of a table's events for a business date (``source.path``)."""
    location = resolve_location(table.source.path_for(business_date), str(project_dir))
    return Path(location.removeprefix("file://").removeprefix("file:"))


def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step: a reader sees the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    with scratch.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    scratch.replace(path)
    _fsync_folder(path.parent)


@dataclass
class TableProgress:
    """What capture has landed for one table (shown by ``hashcdc status``).

    ``source`` is the source table's name as the log last showed it (a rename changes it).
    """

    source: str
    events: int = 0
    files: int = 0
    last_commit_time: str | None = None
    schema_changes: list[str] = field(default_factory=list)
    # The source table's columns (name, type) as last landed; None before the first seen.
    columns: list[list[str]] | None = None


@dataclass
class Offsets:
    """How far a capture (one replication slot) has landed: its commit point.

    ``snapshot`` is ``None`` before the initial snapshot, ``"running"`` while it is read
    (with the slot's ``snapshot_lsn``, ``snapshot_date`` and the files landed so far) and
    ``"done"`` after. ``position`` is the end of the last landed transaction (where
    streaming resumes), ``commit_lsn`` its commit record (transactions at or before it
    are already landed).
    """

    path: Path
    slot: str
    snapshot: str | None = None
    snapshot_lsn: int = 0
    snapshot_date: str | None = None
    # A capture without --date: the last business date each table has a file for, landed
    # or the empty one of a quiet day.
    quiet_through: str | None = None
    snapshot_files: list[str] = field(default_factory=list)
    position: int = 0
    commit_lsn: int = 0
    commit_time: str | None = None
    tables: dict[str, TableProgress] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    # Every failure noted, retried or not (``failures`` keeps the latest five's text).
    failure_count: int = 0
    updated: str | None = None

    @property
    def lost(self) -> int:
        """How often the capture lost its server (older offsets: the failures they kept)."""
        return max(self.failure_count, len(self.failures))

    @classmethod
    def load(cls, path: Path, slot: str) -> Offsets:
        """The offsets saved at ``path``, or empty ones (nothing captured yet)."""
        if not path.exists():
            return cls(path, slot)
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        tables = {name: TableProgress(**value) for name, value in data.pop("tables", {}).items()}
        return cls(path=path, tables=tables, **data)

    def save(self) -> None:
        """Write the offsets in one step (the capture's commit point)."""
        self.updated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        data = {key: value for key, value in self.__dict__.items() if key != "path"}
        data["tables"] = {name: progress.__dict__ for name, progress in self.tables.items()}
        write_atomically(self.path, json.dumps(data, indent=2) + "\n")

    def progress(self, table: TableConfig, source: str) -> TableProgress:
        """The table's progress entry (made on first use)."""
        return self.tables.setdefault(table.name, TableProgress(source))


@dataclass
class _Part:
    folder: Path
    table: str
    handle: Any
    tag: str = ""
    events: int = 0


class Landing:
    """The open part files of one capture, rolled into landed files at transaction ends.

    A paused table's parts land in its held folder (:func:`held_folder`) instead of the
    landing zone; :meth:`release` moves them there when it is resumed.
    """

    def __init__(self, slot: str, project_dir: Path, state_dir: Path) -> None:
        self.slot = slot
        self.project_dir = project_dir
        self.state_dir = state_dir
        self.paused: frozenset[str] = frozenset()
        self.parts: dict[tuple[str, str, str], _Part] = {}
        self.bytes = 0

    def _open(self, table: TableConfig, business_date: str, tag: str, mode: str) -> _Part:
        if table.name in self.paused:
            folder = held_folder(self.state_dir, self.slot, table.name) / business_date
        else:
            folder = landing_folder(table, business_date, self.project_dir)
        folder.mkdir(parents=True, exist_ok=True)
        name = "-".join(
            part for part in (f"{PART_PREFIX}{self.slot}", str(os.getpid()), tag) if part
        )
        handle = (folder / f"{name}{FILE_SUFFIX}").open(
            mode, encoding=None if "b" in mode else "utf-8"
        )
        part = self.parts[(table.name, business_date, tag)] = _Part(folder, table.name, handle, tag)
        return part

    def append(self, table: TableConfig, business_date: str, line: str, tag: str = "") -> None:
        """Append one event (a JSON line) to the table's part for the date.

        ``tag``: :data:`SCHEMA_TAG` for a schema-change event (a part of its own).
        """
        part = self.parts.get((table.name, business_date, tag))
        if part is None:
            part = self._open(table, business_date, tag, "w")
        part.handle.write(line)
        part.handle.write("\n")
        part.events += 1
        self.bytes += len(line) + 1

    def bulk_part(self, table: TableConfig, business_date: str, tag: str) -> Any:
        """A binary part for a bulk of JSON lines (a snapshot's range, written by the server).

        It is landed with the other parts; :meth:`count` records its events.
        """
        return self._open(table, business_date, tag, "wb").handle

    def count(self, table: TableConfig, business_date: str, tag: str, events: int) -> None:
        """Record the events written to a :meth:`bulk_part`."""
        self.parts[(table.name, business_date, tag)].events += events

    @property
    def pending(self) -> bool:
        """Whether events are written but not landed."""
        return bool(self.parts)

    def land(self, name_suffix: str) -> list[tuple[str, Path, int]]:
        """Flush and rename every part to ``<slot>-<name_suffix>.json``: (table, file, events).

        The caller saves the offsets afterwards; until then the files are not committed.
        """
        landed = []
        for part in self.parts.values():
            part.handle.flush()
            os.fsync(part.handle.fileno())
            part.handle.close()
            if part.tag == SCHEMA_TAG:
                name = f"{SCHEMA_FILE_PREFIX}{self.slot}-{name_suffix}"
            else:
                name = "-".join(piece for piece in (self.slot, name_suffix, part.tag) if piece)
            final = part.folder / f"{name}{FILE_SUFFIX}"
            Path(part.handle.name).replace(final)
            _fsync_folder(part.folder)
            landed.append((part.table, final, part.events))
        self.parts.clear()
        self.bytes = 0
        return landed

    def discard(self) -> None:
        """Drop every unlanded part (its transactions are streamed again from the offsets)."""
        for part in self.parts.values():
            part.handle.close()
            Path(part.handle.name).unlink(missing_ok=True)
        self.parts.clear()
        self.bytes = 0


def paused_tables(control: Path) -> list[str]:
    """The tables a capture's control file says are paused."""
    if not control.exists():
        return []
    return list(json.loads(control.read_text(encoding="utf-8"))["paused"])


def set_paused(control: Path, names: list[str], paused: bool) -> list[str]:
    """Pause (or resume) tables in a capture's control file; the tables paused after."""
    now = set(paused_tables(control))
    now = now | set(names) if paused else now - set(names)
    write_atomically(control, json.dumps({"paused": sorted(now)}, indent=2) + "\n")
    return sorted(now)


def held_folder(state_dir: Path, slot: str, table_name: str) -> Path:
    """Where a paused table's landed events wait, one folder per business date."""
    return state_dir / "held" / slot / table_name


def held_files(state_dir: Path, slot: str, table_name: str) -> list[Path]:
    """A table's held files, oldest business date and position first."""
    return sorted(held_folder(state_dir, slot, table_name).glob(f"*/*{FILE_SUFFIX}"))


def release(held: list[Path], folder: Path) -> None:
    """Move held files into a landing folder, each in one step, named with their own date.

    The name keeps the file's position and adds the date it was held for (two dates may
    hold a file of the same position); a run reads every file of its date's folder.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for path in held:
        stem = path.name.removesuffix(FILE_SUFFIX)
        path.replace(folder / f"{stem}-held-{path.parent.name}{FILE_SUFFIX}")
    _fsync_folder(folder)
    for emptied in {path.parent for path in held}:
        with contextlib.suppress(OSError):  # a file past the offsets stays, to be removed
            emptied.rmdir()


def landed_position(path: Path, slot: str) -> int | None:
    """The position a landed streaming file's name carries (``<slot>-<lsn hex>.json``).

    A schema-change file's name (``_schema-<slot>-<lsn hex>.json``) carries one too.
    """
    stem = path.name.removesuffix(FILE_SUFFIX).removeprefix(SCHEMA_FILE_PREFIX)
    if not stem.startswith(f"{slot}-"):
        return None
    suffix = stem.removeprefix(f"{slot}-")
    try:
        return int(suffix, 16)
    except ValueError:
        return None
