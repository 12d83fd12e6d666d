"""The source databases ``hashcdc capture`` reads, behind one interface.

A database kind (``source.database.kind``) is a module that offers :class:`SourceDatabase`:
how to connect and query, the group's prerequisite check, and the server's log position
in the words of ``hashcdc status``. The capture of each kind (its snapshot and its
stream) lives beside it (``postgresql.py``, ``mariadb.py``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from hashcdc.capture import mariadb_source, postgresql_source
from hashcdc.capture.group import CaptureGroup


class SourceDatabase(Protocol):
    """What a database kind offers the capture's commands, ``status`` and the bench."""

    def connect(self, group: CaptureGroup) -> AbstractContextManager[Any]:
        """A connection to the group's database (closed at the end of the block)."""
        ...

    def query(self, connection: Any, sql: str, *parameters: Any) -> list[tuple[Any, ...]]:
        """Run one statement; its rows (none for a statement without)."""
        ...

    def check(self, group: CaptureGroup) -> list[str]:
        """``hashcdc capture --check``'s lines for the group."""
        ...

    def server_position(self, group: CaptureGroup) -> int:
        """The server's current log position, as a number that orders positions."""
        ...

    def log_position(self, connection: Any) -> int:
        """The log position of a connection's server now."""
        ...

    def position_text(self, position: int) -> str:
        """A position in the server's own words (an LSN, a binlog file and offset)."""
        ...

    def distance(self, server: int, landed: int) -> str:
        """How far the landed position is behind the server's, for ``status``."""
        ...


SOURCES: dict[str, SourceDatabase] = {
    "postgresql": postgresql_source,  # type: ignore[dict-item]
    "mariadb": mariadb_source,  # type: ignore[dict-item]
}


def source_for(kind: str) -> SourceDatabase:
    """The module that knows a database kind (``source.database.kind``)."""
    return SOURCES[kind]
