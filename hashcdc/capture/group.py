"""The tables one ``hashcdc capture`` reads, and the words of their checks.

A capture reads one database through one slot (its offsets and, for PostgreSQL, its
replication slot and publication): :func:`capture_group` gathers the selected tables
into that group, or says which groups they need. Each database's module
(``hashcdc.capture.<kind>_source``, :mod:`hashcdc.capture.sources`) checks the group's
prerequisites in the words of :func:`check_report`, :func:`missing_column` and
:func:`unrepresentable`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hashcdc.capture.snapshot import database_of
from hashcdc.config import DatabaseSource, TableConfig
from hashcdc.errors import HashcdcError


@dataclass(frozen=True)
class CaptureGroup:
    """The tables one capture reads: one database, one slot, one publication."""

    database: DatabaseSource
    slot: str
    publication: str
    tables: tuple[TableConfig, ...]

    @property
    def time_zone(self) -> str:
        """The zone of the business dates transactions land in (one for the group)."""
        return self.tables[0].time_zone

    def table_for(self, source_table: str) -> TableConfig | None:
        """The config of a source table (``schema.table``), if it is captured."""
        for table in self.tables:
            if qualified_name(table).lower() == source_table.lower():
                return table
        return None


def qualified_name(table: TableConfig) -> str:
    """The source table as ``schema.table`` (PostgreSQL's ``public`` when none is given)."""
    database = database_of(table)
    name = database.table or ""
    if "." in name:
        return name
    return f"public.{name}" if database.kind == "postgresql" else f"{database.database}.{name}"


def capture_group(tables: list[TableConfig]) -> CaptureGroup:
    """The selected captured tables as one group (they must share a database and slot).

    Raises
    ------
    HashcdcError
        When they read different databases or slots: one capture process each.

    """
    groups: dict[tuple[Any, ...], list[TableConfig]] = {}
    for table in tables:
        database = database_of(table)
        key = (database.kind, database.host, database.port, database.database)
        groups.setdefault((*key, database.capture_slot), []).append(table)
    if len(groups) != 1:
        described = "; ".join(
            f"{key[-1]} on {key[3]}: {', '.join(t.name for t in members)}"
            for key, members in groups.items()
        )
        raise HashcdcError(
            "one capture reads one database through one slot; these tables need "
            f"{len(groups)} ({described}): run `hashcdc capture --select` once per group"
        )
    members = next(iter(groups.values()))
    zones = {table.time_zone for table in members}
    if len(zones) > 1:
        described = ", ".join(f"{t.name} ({t.time_zone})" for t in members)
        raise HashcdcError(
            "one capture lands each transaction in one business date, so the tables it "
            f"reads share changes.time_zone; these differ: {described}. Give them the same "
            "time_zone in their configs"
        )
    database = database_of(members[0])
    return CaptureGroup(
        database, database.capture_slot, database.capture_publication, tuple(members)
    )


def check_report(server: str, problems: list[str], ready: str) -> list[str]:
    """``hashcdc capture --check``'s lines: the server, each problem, or that all is ready."""
    return [f"connected to {server}", *[f"problem: {p}" for p in problems]] + (
        [] if problems else [f"ready: {ready}"]
    )


def missing_column(table: TableConfig, column: Any, source: str, found: list[str]) -> str:
    """A configured column the source table does not have, with what to do if it was dropped."""
    return (
        f"table '{table.name}': column '{column.name}' ({column.source_field}) is not in "
        f"{source} (its columns: {', '.join(found)}); if the source dropped it, add "
        f"`removed: '<the first business date without it>'` to its line in {table.config_file}"
    )


def unrepresentable(table: TableConfig, column: Any, source: str, type_name: str, what: str) -> str:
    """A configured column of a type the pipeline cannot hold, with what to do."""
    return (
        f"table '{table.name}': column '{column.name}' of {source} is {type_name}, {what}, "
        "which hashcdc cannot represent: leave it out of the config, or capture a view that "
        "casts it to text"
    )
