"""The MariaDB/MySQL side of ``hashcdc capture``: connection, prerequisites, positions, values.

A position in the binary log is a file and an offset in it; hashcdc keeps it as one number,
the file's sequence number in the high 32 bits and the offset in the low ones, so that
positions compare in log order (``binlog.000003:1234``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from hashcdc.capture.base import ConnectionLostError, first_line
from hashcdc.capture.group import (
    CaptureGroup,
    check_report,
    missing_column,
    qualified_name,
    unrepresentable,
)
from hashcdc.capture.snapshot import credentials
from hashcdc.config import TableConfig

# Column types a configured column cannot have (the binary log's values would not cast).
UNREPRESENTABLE_TYPES = {
    "set": "a SET",
    "geometry": "a geometry",
    "point": "a geometry",
    "linestring": "a geometry",
    "polygon": "a geometry",
}
# The server settings capture needs, with the value each must have.
REQUIRED_SETTINGS = {
    "log_bin": "ON",
    "binlog_format": "ROW",
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "FULL",
}


def position_number(log_file: str, offset: int) -> int:
    """``binlog.000003`` and an offset as one comparable number."""
    return (int(log_file.rsplit(".", 1)[1]) << 32) | offset


def position_parts(position: int, any_log_file: str) -> tuple[str, int]:
    """The file name (named like ``any_log_file``) and offset of a position number."""
    base, digits = any_log_file.rsplit(".", 1)
    return f"{base}.{position >> 32:0{len(digits)}d}", position & 0xFFFFFFFF


def server_id(slot: str) -> int:
    """The replica id the capture registers with (stable per slot, away from real servers)."""
    return 1_000_000 + zlib.crc32(slot.encode()) % 1_000_000_000


def connection_settings(group: CaptureGroup) -> dict[str, Any]:
    """PyMySQL's connection settings (credentials from the environment variables)."""
    properties = credentials(group.tables[0])
    return {
        "host": group.database.host,
        "port": group.database.port or 3306,
        "user": properties["user"],
        "password": properties.get("password") or "",
    }


@contextmanager
def connect(group: CaptureGroup) -> Iterator[Any]:
    """A connection to the group's server (autocommit)."""
    import pymysql

    settings = connection_settings(group)
    where = f"{settings['host']}:{settings['port']}"
    try:
        connection = pymysql.connect(
            host=settings["host"],
            port=settings["port"],
            user=settings["user"],
            password=settings["password"],
            database=group.database.database,
            autocommit=True,
            charset="utf8mb4",
            # Values as the binary log holds them: a TIMESTAMP in UTC (not in the server's
            # time zone), a CHAR without its padding (whatever the server's sql_mode).
            init_command="set time_zone = '+00:00', "
            "sql_mode = replace(@@sql_mode, 'PAD_CHAR_TO_FULL_LENGTH', '')",
        )
    except pymysql.err.OperationalError as exc:
        raise ConnectionLostError(f"cannot connect to {where}: {first_line(exc)}") from None
    try:
        yield connection
    finally:
        connection.close()


# PyMySQL's codes for a connection lost while reading (the server gone, the network cut).
_LOST_CODES = {2006, 2013}


@cache
def _replica_connection_class() -> type:
    """A PyMySQL connection whose lost link raises :class:`ConnectionLostError`.

    python-mysql-replication reconnects a dropped stream by itself, from the position it
    read up to, with what the capture read but has not landed still in memory. Raised
    past it, the loss takes the capture's own recovery instead: back to the landed
    position, said in the log and kept in the offsets (what ``hashcdc status`` shows).
    """
    import pymysql

    class ReplicaConnection(pymysql.connections.Connection):  # type: ignore[misc]
        def _read_packet(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super()._read_packet(*args, **kwargs)
            except pymysql.err.OperationalError as exc:
                if exc.args and exc.args[0] in _LOST_CODES:
                    raise ConnectionLostError(f"lost the server: {first_line(exc)}") from None
                raise

    return ReplicaConnection


def replica_connection(**settings: Any) -> Any:
    """The binary log reader's connections (its ``pymysql_wrapper``)."""
    return _replica_connection_class()(**settings)


def query(connection: Any, sql: str, *parameters: Any) -> list[tuple[Any, ...]]:
    """The rows of one statement (none for a statement without a result)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters or None)
        return list(cursor.fetchall()) if cursor.description else []


def log_end(connection: Any) -> tuple[str, int]:
    """The binary log's current file and offset (where a new transaction would go)."""
    row = query(connection, "show master status")
    if not row:
        raise ConnectionLostError("the server has no binary log (log_bin is off)")
    return str(row[0][0]), int(row[0][1])


def prerequisite_problems(
    connection: Any, group: CaptureGroup, streaming: bool = False
) -> list[str]:
    """What the server or the tables lack for capture, each with what to change."""
    problems = []
    settings = dict(
        query(
            connection,
            "select variable_name, variable_value from information_schema.global_variables "
            "where variable_name in ('LOG_BIN', 'BINLOG_FORMAT', 'BINLOG_ROW_IMAGE', "
            "'BINLOG_ROW_METADATA')",
        )
    )
    for name, wanted in REQUIRED_SETTINGS.items():
        value = str(settings.get(name.upper(), "")).upper()
        if value != wanted:
            problems.append(
                f"{name} is {value or 'not set'}: set {name} = {wanted} in the server's "
                "configuration ([mariadbd] section) and restart it"
            )
    grants = " ".join(str(row[0]).upper() for row in query(connection, "show grants"))
    if "ALL PRIVILEGES ON *.*" not in grants and (
        "REPLICATION SLAVE" not in grants
        or "BINLOG MONITOR" not in grants
        and "REPLICATION CLIENT" not in grants
    ):
        problems.append(
            "the user may not read the binary log: GRANT REPLICATION SLAVE, BINLOG MONITOR "
            "ON *.* TO the capture's user"
        )
    for table in group.tables:
        problems += _table_problems(connection, table, streaming)
    return problems


def typed_columns(
    connection: Any, schema: str, name: str
) -> tuple[list[tuple[str, str]], list[str]]:
    """A table's columns with their types as MariaDB writes them, and its key's columns."""
    found = query(
        connection,
        "select column_name, column_type, column_key from information_schema.columns "
        "where table_schema = %s and table_name = %s order by ordinal_position",
        schema,
        name,
    )
    columns = [(str(column), str(kind).lower()) for column, kind, _ in found]
    return columns, [str(column) for column, _, key in found if key == "PRI"]


def _table_problems(connection: Any, table: TableConfig, streaming: bool) -> list[str]:
    """A table's problems; ``streaming`` (snapshot done): a dropped column is the log's to show."""
    schema, name = qualified_name(table).split(".", 1)
    columns = {
        str(column): str(data_type).lower()
        for column, data_type in query(
            connection,
            "select column_name, data_type from information_schema.columns "
            "where table_schema = %s and table_name = %s",
            schema,
            name,
        )
    }
    if not columns:
        return [f"table '{table.name}': the source table {schema}.{name} does not exist"]
    problems = []
    for column in table.columns:
        data_type = columns.get(column.source_field)
        # Once streaming, a column the source dropped lands as a schema-change event, and
        # the run says what to write; before the snapshot it is a config mistake.
        if data_type is None and column.removed is None and not streaming:
            problems.append(missing_column(table, column, f"{schema}.{name}", list(columns)))
        elif data_type in UNREPRESENTABLE_TYPES:
            what = UNREPRESENTABLE_TYPES[data_type]
            problems.append(unrepresentable(table, column, f"{schema}.{name}", data_type, what))
    return problems


def check(group: CaptureGroup) -> list[str]:
    """``hashcdc capture --check``: connectivity and prerequisites, as lines to print."""
    with connect(group) as connection:
        (version,) = query(connection, "select version()")[0]
        problems = prerequisite_problems(connection, group)
    settings = connection_settings(group)
    tables = ", ".join(table.name for table in group.tables)
    ready = f"capture {group.slot} (replica id {server_id(group.slot)}), tables {tables}"
    server = f"MariaDB/MySQL {version} at {settings['host']}:{settings['port']}"
    return check_report(server, problems, ready)


def json_value(value: Any, column_type: str = "") -> Any:
    """A value from the server (PyMySQL's or the binary log's Python value) for JSON.

    ``column_type`` (as ``information_schema`` writes it: ``binary(4)``, ``bit(10)``,
    ``float unsigned``) makes the two paths give one form, the text ``SELECT *`` shows,
    where their libraries differ: a ``BINARY(n)`` keeps its zero padding (the log's
    reader strips it), a ``BIT(n)`` is its n binary digits (PyMySQL gives bytes), a
    ``FLOAT`` has the six significant digits the server writes (the log holds the exact
    single-precision value), a ``DECIMAL(p,s)`` every digit of its scale and never an
    exponent, a ``TIME(n)``, ``DATETIME(n)`` or ``TIMESTAMP(n)`` its n fractional digits
    (and a ``TIME`` its hours, beyond a day and signed).
    """
    kind, _, size = column_type.partition("(")
    kind = kind.split()[0] if kind else ""
    sizes = [int(part) for part in size.split(")")[0].split(",") if part.strip().isdigit()]
    width = sizes[0] if sizes else 1
    if kind == "bit" and isinstance(value, (bytes, bytearray)):
        return format(int.from_bytes(value, "big"), f"0{width}b")
    if kind == "binary" and isinstance(value, (bytes, bytearray, str)):
        # The log's reader gives an emptied value as text.
        value = (value.encode() if isinstance(value, str) else bytes(value)).ljust(width, b"\0")
    if kind == "float" and isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.6g}")
    if isinstance(value, decimal.Decimal):
        if kind == "decimal" and len(sizes) == 2 and value.is_finite():
            value = value.quantize(decimal.Decimal(1).scaleb(-sizes[1]), context=_WIDE)
        return f"{value:f}"
    fraction = sizes[0] if sizes and kind in ("time", "datetime", "timestamp") else None
    if isinstance(value, dt.datetime):
        return _with_fraction(value.strftime("%Y-%m-%d %H:%M:%S"), value.microsecond, fraction)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return _time_text(value, fraction)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value).hex()
    return value


# DECIMAL(65,30) has 65 digits: more than the default context's 28.
_WIDE = decimal.Context(prec=100)


def _with_fraction(text: str, microseconds: int, digits: int | None) -> str:
    """``text`` with the fractional seconds a column of ``digits`` shows (None: as needed)."""
    if digits is None:
        digits = 6 if microseconds else 0
    return f"{text}.{microseconds:06d}"[: len(text) + 1 + digits] if digits else text


def _time_text(value: dt.timedelta, digits: int | None) -> str:
    """A ``TIME`` as the server writes it: ``-838:59:59.000`` (hours beyond a day, signed)."""
    total = abs(value) // dt.timedelta(microseconds=1)
    seconds, microseconds = divmod(total, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    sign = "-" if value < dt.timedelta(0) else ""
    return _with_fraction(f"{sign}{hours:02d}:{minute:02d}:{second:02d}", microseconds, digits)


def row_image(
    values: dict[str, Any] | None, column_types: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """A row image for the envelope (``None`` stays ``None``); types by column name."""
    if values is None:
        return None
    types = column_types or {}
    return {name: json_value(value, types.get(name, "")) for name, value in values.items()}


def log_position(connection: Any) -> int:
    """The binary log's current end as one position number."""
    return position_number(*log_end(connection))


def server_position(group: CaptureGroup) -> int:
    """The binary log's current end (``hashcdc status``: how far capture is behind)."""
    with connect(group) as connection:
        return log_position(connection)


def position_text(position: int) -> str:
    """A position as the log file's number and the offset in it."""
    return f"log {position >> 32}:{position & 0xFFFFFFFF}"


def distance(server: int, landed: int) -> str:
    """How far the landed position is behind the log's end: bytes, or log files."""
    files = (server >> 32) - (landed >> 32)
    if files > 0:
        return f"{files} log file(s)"
    return f"{max(server - landed, 0):,} bytes"
