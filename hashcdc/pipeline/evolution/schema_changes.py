"""A captured table's changes of shape: the events capture lands, and what a run makes of them.

``hashcdc capture`` lands each change of a source table's shape it sees in the log
(a column added, dropped or retyped, the table renamed, dropped or created) as one JSON line
in ``_schema-<slot>-<position>.json`` beside the date's events (the leading ``_`` keeps it
out of the events a run reads). A line is Debezium's schema-change event (``source``,
``ts_ms``, ``databaseName``, ``schemaName``, ``ddl``, ``tableChanges`` with the table's
columns as the database types them) plus hashcdc's ``changes``: what differs from the
shape last landed, column by column.

A run of the date reads them before anything is written (:func:`shape_problems`) and
holds each change against the table's config, by the schema-evolution rules
(docs/schema-evolution.md): the config is the contract, so a change the config does not
say yet stops the table's run with the YAML line that says it; a column the config does
not have is a notice (its values are not loaded). Columns are never dropped from the
lake, and a change of shape alone changes no row.

This module imports neither Spark nor a database client.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hashcdc.column_types import from_database_type, type_change_problem

# Landed schema-change files start with this (Spark and Hadoop skip names starting with `_`).
SCHEMA_FILE_PREFIX = "_schema-"
# A column as capture knows it: its name and its type as the database writes it.
SourceColumn = tuple[str, str]

ADDED, DROPPED, RETYPED = "column added", "column dropped", "column type changed"
TABLE_RENAMED, TABLE_DROPPED, TABLE_CREATED = "table renamed", "table dropped", "table created"


def column_changes(before: Iterable[SourceColumn], after: Iterable[SourceColumn]) -> list[dict]:
    """What differs between two shapes of a table, column by column (names compared exactly)."""
    old, new = dict(before), dict(after)
    changes: list[dict[str, Any]] = [
        {"change": ADDED, "column": name, "type": kind}
        for name, kind in new.items()
        if name not in old
    ]
    changes += [
        {"change": DROPPED, "column": name, "type": kind}
        for name, kind in old.items()
        if name not in new
    ]
    changes += [
        {"change": RETYPED, "column": name, "from": old[name], "to": kind}
        for name, kind in new.items()
        if name in old and old[name] != kind
    ]
    return changes


def describe_change(change: dict[str, Any]) -> str:
    """One change of shape in words (the capture's log, ``hashcdc status``)."""
    if "column" in change:
        moved = f" {change['from']} -> {change['to']}" if "from" in change else f" {change['type']}"
        return f"{change['change']} {change['column']}{moved}"
    if "to" in change:
        return f"{change['change']}: {change['from']} -> {change['to']}"
    return str(change["change"])


def schema_change_event(
    source: dict[str, Any],
    table_id: tuple[str, str],
    columns: list[SourceColumn],
    keys: list[str],
    changes: list[dict[str, Any]],
    ddl: str | None = None,
) -> str:
    """One schema-change event as a JSON line (``source``: the position it was seen at)."""
    kinds = {change["change"] for change in changes}
    kind = (
        "CREATE" if TABLE_CREATED in kinds
        else "DROP" if TABLE_DROPPED in kinds
        else "ALTER"
    )  # fmt: skip
    table_change: dict[str, Any] = {
        "type": kind,
        "id": _debezium_id(table_id),
        "table": {
            "primaryKeyColumnNames": keys,
            "columns": [
                {"name": name, "typeName": type_name, "position": position}
                for position, (name, type_name) in enumerate(columns, start=1)
            ],
        },
    }
    renamed = [change for change in changes if change["change"] == TABLE_RENAMED]
    if renamed:
        table_change["previousId"] = _debezium_id(renamed[0]["from"].split(".", 1))
    return json.dumps(
        {
            "source": {"version": "hashcdc", **source},
            "ts_ms": source.get("ts_ms"),
            "databaseName": source.get("db"),
            "schemaName": source.get("schema"),
            "ddl": ddl,
            "tableChanges": [table_change],
            "changes": changes,
        },
        separators=(",", ":"),
        default=str,
    )


def _debezium_id(parts: Iterable[str]) -> str:
    """A table's id as Debezium writes it: ``"schema"."table"``."""
    return ".".join(f'"{part}"' for part in parts)


def read_schema_changes(texts: Iterable[str]) -> list[dict[str, Any]]:
    """The schema-change events of some landed files' texts, in position order."""
    events = [json.loads(line) for text in texts for line in text.splitlines() if line.strip()]
    return sorted(events, key=_position)


def _position(event: dict[str, Any]) -> tuple[int, int]:
    source = event.get("source", {})
    return int(source.get("commit_lsn") or 0), int(source.get("lsn") or 0)


@dataclass(frozen=True)
class ShapeReview:
    """What a date's schema-change events mean for a table's run."""

    notices: list[str]
    # Changes the config does not say yet: the table's run stops before writing.
    refusals: list[str]
    # Columns the events' notice of unloaded fields should not name again.
    announced: set[str]


def shape_problems(table: Any, events: list[dict[str, Any]], business_date: str) -> ShapeReview:
    """Hold a date's schema-change events against a table's config (a ``TableConfig``).

    * a column added that the config lacks: a notice with its YAML line, typed from the
      database's type (its values are not loaded until the config has it);
    * a configured column dropped from the source without ``removed:`` up to this date:
      refused, with the line (a dropped column would otherwise read as values set to null);
    * a configured column whose new source type the config's type cannot hold: refused,
      with the type to write when the change is a widening the lake can follow, else the
      evolution rules' way out (a new column, or a replay);
    * the source table renamed or dropped: a notice (capture says what to change).
    """
    by_field = {name.lower(): column for column in table.columns for name in column.source_fields}
    notices: list[str] = []
    refusals: list[str] = []
    announced: set[str] = set()
    added_lines: dict[str, str] = {}
    where = f"table '{table.name}', business date {business_date}"
    for event in events:
        at = _described_position(event)
        for change in event.get("changes", []):
            kind = change["change"]
            name = change.get("column", "")
            column = by_field.get(name.lower())
            if kind == ADDED and column is None:
                announced.add(name)
                hashcdc_type = from_database_type(change["type"]) or "string"
                added_lines[name] = (
                    f"  - {{name: {name}, type: '{hashcdc_type}', added: '{business_date}'}}"
                )
            elif kind == DROPPED and column is not None and not _removed_by(column, business_date):
                refusals.append(
                    f"{where}: the source dropped column '{name}' ({at}); the lake keeps it, "
                    f"and the config must say from when it is no longer sent: add "
                    f"`removed: '{business_date}'` to its line in {table.config_file}"
                    f"{_rename_hint(event, change)}"
                )
            elif kind == RETYPED and column is not None:
                refusal = _retyped_problem(table, column, change, business_date)
                if refusal:
                    refusals.append(f"{where}: {refusal} ({at})")
            elif kind in (TABLE_RENAMED, TABLE_DROPPED):
                what = f"renamed to {change['to']}" if kind == TABLE_RENAMED else "dropped"
                notices.append(
                    f"{where}: the source table was {what} ({at}); see the capture's log for "
                    "what to change (docs/capture.md, Shape changes)"
                )
    if added_lines:
        notices.append(
            f"{where}: the source added column(s) {', '.join(added_lines)}, which "
            f"{table.config_file} does not have; they are not loaded. To load them from "
            f"{business_date} on, add to its columns (types from the source's):\n"
            + "\n".join(added_lines.values())
        )
    return ShapeReview(notices, refusals, announced)


def _described_position(event: dict[str, Any]) -> str:
    source = event.get("source", {})
    table = ".".join(str(source[k]) for k in ("db", "schema", "table") if source.get(k))
    return f"{table} at position {source.get('commit_lsn')}"


def _removed_by(column: Any, business_date: str) -> bool:
    return column.removed is not None and column.removed <= business_date


def _rename_hint(event: dict[str, Any], dropped: dict[str, Any]) -> str:
    """A dropped and an added column of one type in one change may be a rename."""
    added = [
        change["column"]
        for change in event.get("changes", [])
        if change["change"] == ADDED and change["type"] == dropped["type"]
    ]
    if len(added) != 1:
        return ""
    return (
        f"; or, if it was renamed to '{added[0]}', write `name: {added[0]}` and "
        f"`renamed_from: {dropped['column']}` on its line"
    )


def _retyped_problem(
    table: Any, column: Any, change: dict[str, Any], business_date: str
) -> str | None:
    """Why the config's type cannot hold a column's new source type, and what to write."""
    new_type = from_database_type(change["to"])
    if new_type is None:
        return (
            f"the source changed column '{change['column']}' from {change['from']} to "
            f"{change['to']}, which hashcdc cannot represent: leave the column out "
            f"(`removed: '{business_date}'`), or capture a view that casts it to text"
        )
    if new_type == column.type or type_change_problem(new_type, column.type) is None:
        return None  # the config's type already holds every value of the new one
    if type_change_problem(column.type, new_type) is None:
        widened = ""
        if new_type in ("double", "timestamp") and column.type in ("float", "date"):
            widened = f", widened: {{from: {column.type}, since: '{business_date}'}}"
        return (
            f"the source widened column '{change['column']}' from {change['from']} to "
            f"{change['to']}; values may no longer fit the config's {column.type}: write "
            f"`type: '{new_type}'{widened}` on its line in {table.config_file} (every table "
            "of it is rewritten with the wider type on the next run)"
        )
    why = type_change_problem(column.type, new_type)
    return (
        f"the source changed column '{change['column']}' from {change['from']} to "
        f"{change['to']}, which the lake cannot follow ({why}): "
        f"mark it `removed: '{business_date}'` and add a new column for the new values, or "
        "drop the table's relations and rebuild them with `hashcdc replay --from <first date>`"
    )
