"""The PostgreSQL side of ``hashcdc capture``: which tables, how to connect, what is missing.

A capture group is the tables one process reads (one database, one replication slot, one
publication). Its prerequisites (``wal_level``, the replication privilege, each table's
row identity and column types) are checked before anything is read, each problem named
with the statement that fixes it (``hashcdc capture --check`` prints them).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hashcdc.capture.snapshot import connection_properties, database_of
from hashcdc.config import DatabaseSource, TableConfig
from hashcdc.errors import HashcdcError

# Type categories (pg_type.typcategory) a configured column cannot have: arrays,
# composites, geometry, ranges, pseudo-types.
UNREPRESENTABLE_CATEGORIES = {
    "A": "an array",
    "C": "a composite",
    "G": "a geometric type",
    "R": "a range",
    "P": "a pseudo-type",
}


class CaptureError(HashcdcError):
    """Capture cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class CaptureGroup:
    """The tables one capture reads: one database, one slot, one publication."""

    database: DatabaseSource
    slot: str
    publication: str
    tables: tuple[TableConfig, ...]

    def table_for(self, source_table: str) -> TableConfig | None:
        """The config of a source table (``schema.table``), if it is captured."""
        for table in self.tables:
            if qualified_name(table).lower() == source_table.lower():
                return table
        return None


def qualified_name(table: TableConfig) -> str:
    """The source table as ``schema.table`` (``public`` when the config gives no schema)."""
    name = database_of(table).table or ""
    return name if "." in name else f"public.{name}"


def capture_group(tables: list[TableConfig]) -> CaptureGroup:
    """The selected captured tables as one group (they must share a database and slot).

    Raises
    ------
    HashcdcError
        When they read different databases or slots: one capture process each.

    """
    groups = {}
    for table in tables:
        database = database_of(table)
        slot = database.slot or f"hashcdc_{database.database}".lower()
        groups.setdefault((database.host, database.port, database.database, slot), []).append(table)
    if len(groups) != 1:
        described = "; ".join(
            f"{slot} on {db}: {', '.join(t.name for t in members)}"
            for (_, _, db, slot), members in groups.items()
        )
        raise HashcdcError(
            "one capture reads one database through one slot; these tables need "
            f"{len(groups)} ({described}): run `hashcdc capture --select` once per group"
        )
    members = next(iter(groups.values()))
    database = database_of(members[0])
    return CaptureGroup(
        database, database.capture_slot, database.capture_publication, tuple(members)
    )


def _dsn(group: CaptureGroup) -> dict[str, Any]:
    properties = connection_properties(group.tables[0])
    database = group.database
    return {
        "host": database.host,
        "port": database.port or 5432,
        "dbname": database.database,
        "user": properties["user"],
        "password": properties.get("password"),
        "application_name": f"hashcdc capture {group.slot}",
    }


@contextmanager
def connect(group: CaptureGroup, replication: bool = False) -> Iterator[Any]:
    """A connection to the group's database (autocommit), or a replication connection."""
    import psycopg2
    import psycopg2.extras

    factory = psycopg2.extras.LogicalReplicationConnection if replication else None
    where = f"{group.database.host}:{group.database.port or 5432}/{group.database.database}"
    try:
        connection = psycopg2.connect(connection_factory=factory, **_dsn(group))
    except psycopg2.OperationalError as exc:
        raise ConnectionLostError(f"cannot connect to {where}: {first_line(exc)}") from None
    try:
        if not replication:
            connection.autocommit = True
        yield connection
    finally:
        connection.close()


class ConnectionLostError(HashcdcError):
    """The server went away or refused a connection: retried until the deadline."""


def first_line(error: Exception) -> str:
    """An error's first line (drivers add context lines after it)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def query(connection: Any, sql: str, *parameters: Any) -> list[tuple[Any, ...]]:
    """The rows of one statement (none for a statement without a result)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters)
        return cursor.fetchall() if cursor.description else []


# -- prerequisites ---------------------------------------------------------------------


def prerequisite_problems(connection: Any, group: CaptureGroup) -> list[str]:
    """What the server or the tables lack for capture, each with what to change."""
    problems = []
    (wal_level,) = query(connection, "show wal_level")[0]
    if wal_level != "logical":
        problems.append(
            f"wal_level is {wal_level}: set wal_level = logical in postgresql.conf (or "
            "ALTER SYSTEM SET wal_level = logical) and restart the server"
        )
    user = query(
        connection,
        "select rolname, rolreplication or rolsuper from pg_roles where rolname = current_user",
    )[0]
    if not user[1]:
        problems.append(f"the user {user[0]} may not replicate: ALTER ROLE {user[0]} REPLICATION")
    for table in group.tables:
        problems += _table_problems(connection, table)
    return problems


def _table_problems(connection: Any, table: TableConfig) -> list[str]:
    name = qualified_name(table)
    found = query(
        connection,
        "select c.oid, c.relreplident, exists (select 1 from pg_index i where "
        "i.indrelid = c.oid and i.indisprimary) from pg_class c join pg_namespace n on "
        "n.oid = c.relnamespace where n.nspname = %s and c.relname = %s",
        *name.split(".", 1),
    )
    if not found:
        return [f"table '{table.name}': the source table {name} does not exist"]
    oid, identity, has_primary_key = found[0]
    problems = []
    if identity == "n" or (identity == "d" and not has_primary_key):
        problems.append(
            f"table '{table.name}': {name} has no primary key, so its updates and deletes "
            f"carry no row identity: ALTER TABLE {name} REPLICA IDENTITY FULL (or add a "
            "primary key)"
        )
    columns = {
        row[0]: (row[1], row[2])
        for row in query(
            connection,
            "select a.attname, format_type(a.atttypid, a.atttypmod), t.typcategory from "
            "pg_attribute a join pg_type t on t.oid = a.atttypid where a.attrelid = %s and "
            "a.attnum > 0 and not a.attisdropped",
            oid,
        )
    }
    for column in table.columns:
        if column.source_field not in columns:
            problems.append(
                f"table '{table.name}': column '{column.name}' ({column.source_field}) is not "
                f"in {name} (its columns: {', '.join(columns)})"
            )
            continue
        type_name, category = columns[column.source_field]
        if category in UNREPRESENTABLE_CATEGORIES:
            problems.append(
                f"table '{table.name}': column '{column.name}' of {name} is {type_name}, "
                f"{UNREPRESENTABLE_CATEGORIES[category]}, which hashcdc cannot represent: "
                "leave it out of the config, or capture a view that casts it to text"
            )
    return problems


def check(group: CaptureGroup) -> list[str]:
    """``hashcdc capture --check``: connectivity and prerequisites, as lines to print."""
    with connect(group) as connection:
        (version,) = query(connection, "show server_version")[0]
        problems = prerequisite_problems(connection, group)
    where = f"{group.database.host}:{group.database.port or 5432}/{group.database.database}"
    lines = [f"connected to PostgreSQL {version} at {where}"]
    lines += [f"problem: {problem}" for problem in problems]
    if not problems:
        lines.append(
            f"ready: slot {group.slot}, publication {group.publication}, tables "
            + ", ".join(table.name for table in group.tables)
        )
    return lines
