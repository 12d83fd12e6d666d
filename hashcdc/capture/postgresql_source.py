"""The PostgreSQL side of ``hashcdc capture``: how to connect, what is missing, values.

A capture group's prerequisites (``wal_level``, the replication privilege, each table's
row identity and column types) are checked before anything is read, each problem named
with the statement that fixes it (``hashcdc capture --check`` prints them).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hashcdc.capture import pgoutput
from hashcdc.capture.base import ConnectionLostError, first_line
from hashcdc.capture.group import (
    CaptureGroup,
    check_report,
    missing_column,
    qualified_name,
    unrepresentable,
)
from hashcdc.capture.snapshot import credentials
from hashcdc.config import DEBEZIUM_UNAVAILABLE_VALUE, TableConfig

# PostgreSQL types whose text output becomes a JSON number or boolean; every other type
# stays text (numeric keeps its digits that way).
_INTEGER_TYPES = frozenset({20, 21, 23, 26})  # int8, int2, int4, oid
_FLOAT_TYPES = frozenset({700, 701})  # float4, float8
_BOOLEAN_TYPE = 16
# Type categories (pg_type.typcategory) a configured column cannot have: arrays,
# composites, geometry, ranges, pseudo-types.
UNREPRESENTABLE_CATEGORIES = {
    "A": "an array",
    "C": "a composite",
    "G": "a geometric type",
    "R": "a range",
    "P": "a pseudo-type",
}


def dsn(group: CaptureGroup) -> dict[str, Any]:
    """The group's connection settings, as psycopg2 and the PostgreSQL tools take them."""
    properties = credentials(group.tables[0])
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
        connection = psycopg2.connect(connection_factory=factory, **dsn(group))
    except psycopg2.OperationalError as exc:
        raise ConnectionLostError(f"cannot connect to {where}: {first_line(exc)}") from None
    try:
        if not replication:
            connection.autocommit = True
        yield connection
    finally:
        connection.close()


def query(connection: Any, sql: str, *parameters: Any) -> list[tuple[Any, ...]]:
    """The rows of one statement (none for a statement without a result)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters)
        return cursor.fetchall() if cursor.description else []


# -- prerequisites ---------------------------------------------------------------------


def prerequisite_problems(
    connection: Any, group: CaptureGroup, streaming: bool = False
) -> list[str]:
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
        problems += _table_problems(connection, table, streaming)
    return problems


def _table_problems(connection: Any, table: TableConfig, streaming: bool) -> list[str]:
    """A table's problems; ``streaming`` (snapshot done): a dropped column is the log's to show."""
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
            # Once streaming, a column the source dropped lands as a schema-change event, and
            # the run says what to write; before the snapshot it is a config mistake.
            if column.removed is None and not streaming:
                problems.append(missing_column(table, column, name, list(columns)))
            continue
        type_name, category = columns[column.source_field]
        if category in UNREPRESENTABLE_CATEGORIES:
            what = UNREPRESENTABLE_CATEGORIES[category]
            problems.append(unrepresentable(table, column, name, type_name, what))
    return problems


def check(group: CaptureGroup) -> list[str]:
    """``hashcdc capture --check``: connectivity and prerequisites, as lines to print."""
    with connect(group) as connection:
        (version,) = query(connection, "show server_version")[0]
        problems = prerequisite_problems(connection, group)
    where = f"{group.database.host}:{group.database.port or 5432}/{group.database.database}"
    tables = ", ".join(table.name for table in group.tables)
    ready = f"slot {group.slot}, publication {group.publication}, tables {tables}"
    return check_report(f"PostgreSQL {version} at {where}", problems, ready)


def json_value(text: Any, type_oid: int) -> Any:
    """A column's text from the server as a JSON value (by the column's type)."""
    if text is None:
        return None
    if text is pgoutput.UNCHANGED_TOAST:
        return DEBEZIUM_UNAVAILABLE_VALUE
    if type_oid == _BOOLEAN_TYPE:
        return text in ("t", "true")  # the output function says t, a cast to text true
    if type_oid in _INTEGER_TYPES:
        return int(text)
    if type_oid in _FLOAT_TYPES and text not in ("NaN", "Infinity", "-Infinity"):
        return float(text)
    return text


def table_relation(connection: Any, schema: str, name: str) -> pgoutput.Relation:
    """A table's columns (name, type, whether in the primary key), as the stream's relation."""
    columns = query(
        connection,
        "select a.attname, a.atttypid, coalesce(a.attnum = any(i.indkey), false), "
        "a.atttypmod from "
        "pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on "
        "n.oid = c.relnamespace left join pg_index i on i.indrelid = c.oid and "
        "i.indisprimary where n.nspname = %s and c.relname = %s and a.attnum > 0 and "
        "not a.attisdropped order by a.attnum",
        schema,
        name,
    )
    relation = pgoutput.Relation(0, schema, name, "d")
    relation.columns = [pgoutput.Column(*column) for column in columns]
    return relation


def relation_id(connection: Any, qualified: str) -> int | None:
    """A table's relation id (its OID: the stream's id of it, kept through a rename)."""
    found = query(
        connection,
        "select c.oid from pg_class c join pg_namespace n on n.oid = c.relnamespace "
        "where n.nspname = %s and c.relname = %s",
        *qualified.split(".", 1),
    )
    return int(found[0][0]) if found else None


def typed_columns(connection: Any, relation: pgoutput.Relation) -> list[tuple[str, str]]:
    """A relation's columns with their types as PostgreSQL writes them (``numeric(12,2)``)."""
    if not relation.columns:
        return []
    names = query(
        connection,
        "select format_type(t.oid, t.modifier) from unnest(%s::oid[], %s::int[]) "
        "with ordinality as t(oid, modifier, n) order by t.n",
        [c.type_oid for c in relation.columns],
        [c.type_modifier for c in relation.columns],
    )
    return [(c.name, name) for c, (name,) in zip(relation.columns, names, strict=True)]


def json_expression(column: str, type_oid: int) -> str:
    """The SQL for a column whose ``row_to_json`` value is the one :func:`json_value` gives.

    ``row_to_json`` writes booleans, integers and floats as JSON (NaN and the infinities
    quoted); every other type goes as the text of its output function, as in the stream.
    Not a cast to ``text``: that strips ``char(n)``'s padding and gives ``inet`` a netmask
    (``format``'s ``%s`` calls the output function; a null stays null).
    """
    quoted = '"' + column.replace('"', '""') + '"'
    if type_oid == _BOOLEAN_TYPE or type_oid in _FLOAT_TYPES:
        return quoted
    if type_oid in _INTEGER_TYPES:
        return f"{quoted}::int8"
    return f"case when {quoted} is null then null else format('%s', {quoted}) end"


# COPY's CSV format with a delimiter and a quote that JSON text never holds raw (the server
# escapes every control character): each row comes out as its JSON line, unescaped.
_JSON_LINES = "(format csv, delimiter e'\\x02', quote e'\\x01')"


def snapshot_copy(
    relation: pgoutput.Relation, envelope_tail: str, pages: tuple[int, int | None]
) -> str:
    """A ``COPY`` of the table's rows in a range of pages as Debezium ``r`` envelopes.

    The server builds each JSON line; Python only moves the bytes to the landed file.

    ``envelope_tail``: the envelope after ``after`` (a quoted SQL literal); ``pages``: the
    first page and the page after the last (``None``: to the end).
    """
    columns = ", ".join(
        f'{json_expression(c.name, c.type_oid)} as "{c.name.replace(chr(34), chr(34) * 2)}"'
        for c in relation.columns
    )
    first, end = pages
    where = f"where ctid >= '({first},0)'::tid"
    if end is not None:
        where += f" and ctid < '({end},0)'::tid"
    rows = f'select {columns} from "{relation.namespace}"."{relation.name}" {where}'
    head = """'{"before":null,"after":'"""
    # The row's alias is no column's name (a column named like it would be taken instead).
    image = "row_to_json(hashcdc_row)::text"
    lines = f"select {head} || {image} || {envelope_tail} from ({rows}) hashcdc_row"
    return f"copy ({lines}) to stdout {_JSON_LINES}"


def page_ranges(
    connection: Any, relation: pgoutput.Relation, ranges: int
) -> list[tuple[int, int | None]]:
    """The table's pages cut into ``ranges`` ranges of pages.

    PostgreSQL 14 and later scan a ``ctid`` range alone (a TID range scan); before, each
    range would scan the whole table, so there is one.
    """
    (version,) = query(connection, "show server_version_num")[0]
    (pages,) = query(
        connection,
        "select pg_relation_size(format('%%I.%%I', %s, %s)::regclass) "
        "/ current_setting('block_size')::int",
        relation.namespace,
        relation.name,
    )[0]
    ranges = max(1, min(ranges, pages)) if int(version) >= 140000 else 1
    cuts = [pages * i // ranges for i in range(ranges)]
    return [(cut, end) for cut, end in zip(cuts, [*cuts[1:], None], strict=True)]


def row_image(
    relation: pgoutput.Relation, values: tuple[Any, ...] | None, identity_only: bool = False
) -> dict[str, Any] | None:
    """A row image by column name (``identity_only``: the replica identity's columns)."""
    if values is None:
        return None
    return {
        column.name: json_value(value, column.type_oid)
        for column, value in zip(relation.columns, values, strict=True)
        if column.is_key or not identity_only
    }


def log_position(connection: Any) -> int:
    """The WAL's current end (where a new transaction would go)."""
    return pgoutput.lsn_number(query(connection, "select pg_current_wal_lsn()::text")[0][0])


def server_position(group: CaptureGroup) -> int:
    """The server's current WAL position (``hashcdc status``: how far capture is behind)."""
    with connect(group) as connection:
        return log_position(connection)


def position_text(position: int) -> str:
    """An LSN as PostgreSQL writes it."""
    return pgoutput.lsn_text(position)


def distance(server: int, landed: int) -> str:
    """How far the landed position is behind the server's, in bytes of WAL."""
    return f"{max(server - landed, 0):,} bytes"
