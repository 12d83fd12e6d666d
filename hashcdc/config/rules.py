"""The rules of a table config that involve more than one field, or a type's syntax.

The JSON Schema (:mod:`hashcdc.config.schema`) checks each field alone; these check what
fields say together (a key that is ignored, a feed's sequence, a widening's dates, …).
Each adds its problems, naming the file and the field, so a user fixes a config in one
pass.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

from hashcdc.column_types import (
    lowest_sequence_types,
    normalize_type,
    type_change_problem,
    type_names,
)
from hashcdc.config.model import SequenceField
from hashcdc.config.schema import (
    COLUMN_ENCODINGS,
    NAME_PATTERN,
    RESERVED_COLUMNS,
    SCHEMA_DEFS,
    TEXT_SEQUENCE_FIELDS,
    Problems,
    event_formats,
    field_place,
)
from hashcdc.dates import time_zone
from hashcdc.errors import HashcdcError


def _column_rules(where: str, column: Any, problems: Problems) -> None:
    """The rules of one column that involve more than one field, or its type's syntax."""
    if not isinstance(column, dict):
        return
    name = column.get("name")
    if name in RESERVED_COLUMNS:
        problems.add(f"{where}.name", f"'{name}' is reserved for hashcdc's own columns")
    raw_type = column.get("type", column.get("target_type"))
    column_type = normalize_type(raw_type)
    if (
        column_type is None
        and isinstance(raw_type, str)
        and raw_type.count("(") > raw_type.count(")")
    ):
        problems.add(
            f"{where}.type",
            f"{raw_type!r} looks cut at a comma: inside {{...}} write the type in quotes, "
            "e.g. type: 'decimal(10,2)'",
        )
    elif column_type is None:
        problems.add(
            f"{where}.type",
            f"unknown type {raw_type!r}; use one of {type_names()}",
        )
    key = column.get("key", False) is True
    if key and column.get("ignore") is True:
        problems.add(f"{where}.ignore", "a key column cannot be ignored by change detection")
    if key and column.get("nullable") is True:
        problems.add(f"{where}.nullable", "a key column cannot be nullable")
    fmt = column.get("format")
    if isinstance(fmt, str) and column_type not in ("date", "timestamp"):
        problems.add(f"{where}.format", "a format is a string, for date and timestamp columns only")
    encoding = column.get("encoding")
    if encoding in COLUMN_ENCODINGS and not (column_type or "").startswith("decimal"):
        problems.add(
            f"{where}.encoding", f"'{encoding}' decodes decimals: give a decimal(p,s) type"
        )
    if column.get("source_scale") is not None and encoding != "debezium_decimal":
        problems.add(
            f"{where}.source_scale",
            "only with encoding: debezium_decimal (the scale of the source column)",
        )
    _lifecycle_rules(where, column, column_type, problems)


def _lifecycle_rules(
    where: str, column: dict[str, Any], column_type: str | None, problems: Problems
) -> None:
    """A column's shape changes: added/removed dates, widening, sensitivity of keys."""
    for name in ("added", "removed"):
        value = column.get(name)
        if isinstance(value, str) and _bad_date(value):
            problems.add(f"{where}.{name}", f"{value!r} is not a date (YYYY-MM-DD)")
    added, removed = column.get("added"), column.get("removed")
    if isinstance(added, str) and isinstance(removed, str) and removed <= added:
        problems.add(f"{where}.removed", f"must be after added ({added})")
    if column.get("added_as_update") is True and added is None:
        problems.add(f"{where}.added_as_update", "only with added (the column's first date)")
    if column.get("key") is True:
        for name in ("added", "removed", "sensitive"):
            if column.get(name) not in (None, False):
                problems.add(
                    f"{where}.{name}",
                    "not for a key column: the key identifies each row in every table",
                )
    widened = column.get("widened")
    if isinstance(widened, dict):
        earlier = normalize_type(widened.get("from"))
        since = widened.get("since")
        if isinstance(since, str) and _bad_date(since):
            problems.add(f"{where}.widened.since", f"{since!r} is not a date (YYYY-MM-DD)")
        if earlier is None:
            problems.add(f"{where}.widened.from", f"unknown type {widened.get('from')!r}")
        elif column_type is not None:
            problem = type_change_problem(earlier, column_type)
            if problem or earlier == column_type:
                problems.add(
                    f"{where}.widened",
                    (problem or f"from {earlier} to {column_type} is no change")
                    + "; to change a column's type otherwise, add a new column (and mark this "
                    "one removed), or rebuild the tables with replay from the first date",
                )


def _bad_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return True
    return not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text)


def _columns_rules(columns: list[Any], extract_type: Any, problems: Problems) -> None:
    """The rules of the column list as a whole: names, source fields, keys."""
    mappings = [c for c in columns if isinstance(c, dict)]
    for index, column in enumerate(columns):
        _column_rules(field_place({"columns": columns}, ["columns", index]), column, problems)
    names = [c.get("name") for c in mappings if isinstance(c.get("name"), str)]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.add("columns", f"duplicate column name '{name}'")
    sources = [str(c.get("source_name") or c.get("name")).lower() for c in mappings]
    for source in sorted({s for s in sources if sources.count(s) > 1}):
        problems.add("columns", f"two columns read the same source field '{source}'")
    earlier = [(n, c.get("name")) for c in mappings for n in as_names(c.get("renamed_from"))]
    for old, new in earlier:
        if old in names:
            problems.add(
                "columns",
                f"'{new}' is renamed from '{old}', which is still a column: a renamed column "
                "keeps one name",
            )
    keys = [c for c in mappings if c.get("key") is True]
    if not keys and any(c.get("sensitive") is True for c in mappings):
        problems.add(
            "columns",
            "sensitive columns need a key: the sensitive tables are keyed by keyhash",
        )
    if mappings and not keys and extract_type != "changes":
        problems.add("columns", "no key column: mark at least one column with 'key: true'")
    if mappings and not keys and all(c.get("ignore") is True for c in mappings):
        problems.add("columns", "a table without a key needs at least one compared column")


def sequence_field(item: Any) -> dict[str, Any] | None:
    """A sequence field as a mapping (a string is its path); None when it is neither."""
    if isinstance(item, str):
        return {"field": item}
    return item if isinstance(item, dict) else None


def _changes_rules(raw: dict[str, Any], problems: Problems) -> None:
    """The ``changes`` block: required for change feeds, refused otherwise, and its rules."""
    block = raw.get("changes")
    source = raw.get("source")
    fmt = source.get("format", "csv") if isinstance(source, dict) else "csv"
    if raw.get("extract_type") != "changes":
        if block is not None:
            problems.add("changes", "only for extract_type: changes")
        if fmt in event_formats():
            problems.add(
                "source.format", f"'{fmt}' carries change events: use extract_type: changes"
            )
        return
    if block is None:
        problems.add("changes", SCHEMA_DEFS["#/$defs/changes"]["x-message"])
        return
    if not isinstance(block, dict):
        return  # the schema says so
    raw_fields = block.get("sequence_by")
    items = [raw_fields] if isinstance(raw_fields, str) else raw_fields
    fields = [sequence_field(i) for i in items] if isinstance(items, list) else []
    paths = [f.get("field") for f in fields if f and isinstance(f.get("field"), str)]
    for index, item in enumerate(fields):
        if not item or not isinstance(item.get("field"), str):
            continue
        where = f"changes.sequence_by[{index}]"
        field_type = sequence_type(item)
        if field_type is None:
            problems.add(f"{where}.type", f"unknown type {item.get('type')!r}")
        elif item.get("missing") == "lowest" and field_type not in lowest_sequence_types():
            problems.add(
                f"{where}.missing",
                f"'lowest' is for {', '.join(lowest_sequence_types())} fields, not {field_type}",
            )
    aliases = [SequenceField(field=path).alias for path in paths]
    if len(set(aliases)) != len(aliases):
        problems.add("changes.sequence_by", "names the same field twice")
    operation_column = block.get("operation_column")
    if fmt in event_formats():
        if operation_column is not None:
            problems.add("changes.operation_column", f"not used by format '{fmt}' (it has op)")
    else:
        if not isinstance(operation_column, str):
            problems.add(
                "changes.operation_column",
                f"a {fmt} feed needs the name of its operation column (values "
                f"c/u/d/r/t or insert/update/delete/read/truncate), got {operation_column!r}",
            )
        for path in paths:
            if "." in path:
                problems.add(
                    "changes.sequence_by", f"'{path}': a {fmt} feed orders by its own columns"
                )
        columns = raw.get("columns")
        names = (
            {c.get("name") for c in columns if isinstance(c, dict)}
            if isinstance(columns, list)
            else set()
        )
        if operation_column in names:
            problems.add("changes.operation_column", f"'{operation_column}' is a configured column")
    if raw.get("duplicates_keep_last_by") is not None:
        problems.add(
            "duplicates_keep_last_by", "not for change feeds: changes.sequence_by orders events"
        )
    zone = block.get("time_zone")
    if isinstance(zone, str) and zone:
        try:
            time_zone(zone)
        except HashcdcError as exc:
            problems.add("changes.time_zone", str(exc))


def sequence_type(item: dict[str, Any]) -> str | None:
    """A sequence field's normalized type (text for binlog file names, else bigint)."""
    default = "string" if item.get("field") in TEXT_SEQUENCE_FIELDS else "bigint"
    return normalize_type(item.get("type", default))


def table_rules(raw: dict[str, Any], file: str, problems: Problems) -> None:
    """The rules that involve more than one field of a table config."""
    name = raw.get("name")
    stem = Path(file).stem
    if isinstance(name, str) and NAME_PATTERN.match(name) and stem != name:
        problems.add("name", f"'{name}' must match the file name '{stem}.yml'")
    columns = raw.get("columns")
    if isinstance(columns, list) and columns:
        _columns_rules(columns, raw.get("extract_type"), problems)
    keep_last_by = raw.get("duplicates_keep_last_by")
    if isinstance(keep_last_by, str) and raw.get("extract_type") != "changes":
        by_name = {c.get("name"): c for c in columns or [] if isinstance(c, dict)}
        if keep_last_by not in by_name:
            problems.add(
                "duplicates_keep_last_by", f"must name a configured column, got {keep_last_by!r}"
            )
        elif by_name[keep_last_by].get("key") is True:
            problems.add("duplicates_keep_last_by", "must be a non-key column")
    _changes_rules(raw, problems)
    _database_rules(raw, problems)
    _kafka_rules(raw, problems)
    _group_rules(raw, problems)


def _group_rules(raw: dict[str, Any], problems: Problems) -> None:
    """A group's member: an extract or a keyed feed, its columns all in the group's state."""
    group = raw.get("group")
    if not isinstance(group, str):
        return
    alone = "; remove `group:` to run the table on its own"
    if raw.get("extract_type") not in ("full", "delta", "changes"):
        problems.add(
            "group",
            "tables in a group are full or delta extracts or change feeds, this one is "
            f"{raw.get('extract_type')!r}{alone}",
        )
    changes = raw.get("changes")
    if raw.get("extract_type") == "changes" and isinstance(changes, dict):
        if changes.get("history") == "audit":
            problems.add(
                "changes.history", f"a change feed in a group keeps the net history{alone}"
            )
        columns = [c for c in raw.get("columns") or [] if isinstance(c, dict)]
        if columns and not any(c.get("key") is True for c in columns):
            problems.add(
                "group", f"a change feed in a group has a key (its rows are matched by it){alone}"
            )


def group_problems(tables: list[Any]) -> list[str]:
    """The rules across a project's configs on groups.

    A group's name is no table's name, and its tables share one extract type (a missing
    key is a delete in a full extract, not in a delta: the group's one diff says which).
    """
    names = {t.name for t in tables}
    problems = [
        f"{t.config_file}: group '{t.group}' is also the name of a table: name the group "
        "differently (its state is <group>_state)"
        for t in tables
        if t.group is not None and t.group in names
    ]
    first: dict[str, Any] = {}
    for table in sorted(tables, key=lambda t: t.name):
        if table.group is None:
            continue
        other = first.setdefault(table.group, table)
        if other.extract_type != table.extract_type:
            problems.append(
                f"{table.config_file}: a {table.extract_type} extract in group '{table.group}', "
                f"whose table '{other.name}' is a {other.extract_type} one: the tables of a "
                "group share one extract_type; put it in a group of its kind (or run it on "
                "its own: no `group:`)"
            )
        elif table.is_feed and _event_order(table) != _event_order(other):
            problems.append(
                f"{table.config_file}: change feed '{table.name}' in group '{table.group}' is "
                f"ordered by {_event_order(table)}, its table '{other.name}' by "
                f"{_event_order(other)}: the feeds of a group share one changes.sequence_by "
                "and one transport (files or Kafka), as the tables of one connector or one "
                "`hashcdc capture` do; put it in a group of its kind (or run it on its own)"
            )
    return problems


def _event_order(table: Any) -> str:
    """A feed's event order and transport, which the feeds of a group share."""
    fields = ", ".join(f"{f.field} {f.type}" for f in table.changes.sequence_by)
    transport = "Kafka" if table.source.kafka is not None else "files"
    return f"({fields}) from {transport}"


# Where `hashcdc extract` lands a database table's snapshot: files it writes whole.
LANDED_FORMATS = ("parquet", "csv")
# What `hashcdc capture` lands, and the sequence its events are ordered by: the commit's
# position, then the change's own within its transaction.
CAPTURED_FORMAT = "debezium"
CAPTURED_SEQUENCE = ("source.commit_lsn", "source.lsn")


def _database_rules(raw: dict[str, Any], problems: Problems) -> None:
    """A database source: snapshots landed as extracts, or changes captured from its log."""
    source = raw.get("source")
    database = source.get("database") if isinstance(source, dict) else None
    if not isinstance(database, dict):
        return
    if (database.get("table") is None) == (database.get("query") is None):
        problems.add("source.database", "give exactly one of table and query")
    partitions = database.get("partitions", 1)
    parallel = isinstance(partitions, int) and partitions > 1
    if database.get("kind") == "mariadb" and parallel:
        problems.add(
            "source.database.partitions",
            "a mariadb table is read on one connection (its consistent snapshot cannot be "
            "shared between connections): remove partitions",
        )
    fmt = source.get("format", "csv")
    if raw.get("extract_type") == "changes":
        _captured_rules(raw, database, fmt, problems)
        return
    if parallel and database.get("kind") != "mariadb" and not database.get("partition_column"):
        problems.add(
            "source.database.partitions",
            "parallel reads split the range of a column: give partition_column too",
        )
    if fmt not in LANDED_FORMATS:
        problems.add(
            "source.format",
            f"a database table is landed as {' or '.join(LANDED_FORMATS)}, not {fmt}",
        )


def _captured_rules(
    raw: dict[str, Any], database: dict[str, Any], fmt: str, problems: Problems
) -> None:
    """A table whose changes `hashcdc capture` streams: a table, Debezium events, LSN order."""
    if fmt != CAPTURED_FORMAT:
        problems.add(
            "source.format",
            f"`hashcdc capture` lands Debezium envelopes: set format: {CAPTURED_FORMAT}",
        )
    if database.get("query") is not None:
        problems.add("source.database.query", "a log is captured per table: give table")
    if database.get("partition_column") is not None:
        problems.add(
            "source.database.partition_column",
            "a captured snapshot is read in ranges of pages: remove partition_column (set "
            "partitions for parallel reads)",
        )
    changes = raw.get("changes")
    sequence = changes.get("sequence_by") if isinstance(changes, dict) else None
    fields = [f.get("field") if isinstance(f, dict) else f for f in as_names(sequence)]
    if fields != list(CAPTURED_SEQUENCE):
        problems.add(
            "changes.sequence_by",
            "captured events are ordered by their commit, then by the change within it: "
            f"sequence_by: [{', '.join(CAPTURED_SEQUENCE)}]",
        )


# The formats of Debezium's JSON converter, what a topic of change events holds.
KAFKA_FORMATS = ("debezium", "debezium_flat")


def _kafka_rules(raw: dict[str, Any], problems: Problems) -> None:
    """Where events come from: a path (files) or a Kafka topic, exactly one."""
    source = raw.get("source")
    if not isinstance(source, dict):
        return
    kafka = source.get("kafka")
    if (source.get("path") is None) == (kafka is None):
        problems.add(
            "source",
            "give exactly one of path (files with {business_date} in it) and kafka (a topic)",
        )
    if kafka is None:
        return
    if source.get("database") is not None:
        problems.add("source.kafka", "a topic is read as it is: remove database")
    if raw.get("extract_type") != "changes":
        problems.add("extract_type", "a Kafka topic holds change events: set extract_type: changes")
    if source.get("format", "csv") not in KAFKA_FORMATS:
        problems.add(
            "source.format",
            f"a topic of Debezium events is read as {' or '.join(KAFKA_FORMATS)}: set format",
        )


def as_names(raw: Any) -> list[str]:
    """A name or a list of names as a list."""
    if raw is None:
        return []
    return [raw] if isinstance(raw, str) else list(raw)
