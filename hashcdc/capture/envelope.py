"""Captured changes as Debezium envelopes: one JSON line per row change.

Values are PostgreSQL's text output; integers, floats and booleans become JSON numbers and
booleans, every other type stays text (``numeric`` keeps its digits). A value the server
did not send (an unchanged TOASTed column) becomes Debezium's placeholder, which the
change-feed stage fills from the row before.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

from hashcdc.capture import pgoutput
from hashcdc.capture.server import CaptureGroup
from hashcdc.config import DEBEZIUM_UNAVAILABLE_VALUE

# PostgreSQL types whose text output becomes a JSON number or boolean.
_INTEGER_TYPES = frozenset({20, 21, 23, 26})  # int8, int2, int4, oid
_FLOAT_TYPES = frozenset({700, 701})  # float4, float8
_BOOLEAN_TYPE = 16
SOURCE_CONNECTOR = "postgresql"


def json_value(text: Any, type_oid: int) -> Any:
    """A column's text from the server as a JSON value (by the column's type)."""
    if text is None:
        return None
    if text is pgoutput.UNCHANGED_TOAST:
        return DEBEZIUM_UNAVAILABLE_VALUE
    if type_oid == _BOOLEAN_TYPE:
        return text == "t"
    if type_oid in _INTEGER_TYPES:
        return int(text)
    if type_oid in _FLOAT_TYPES and text not in ("NaN", "Infinity", "-Infinity"):
        return float(text)
    return text


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


def envelope(
    group: CaptureGroup,
    relation: pgoutput.Relation,
    op: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    source: dict[str, Any],
) -> str:
    """One Debezium envelope as a JSON line."""
    return json.dumps(
        {
            "before": before,
            "after": after,
            "source": {
                "version": "hashcdc",
                "connector": SOURCE_CONNECTOR,
                "name": group.slot,
                "db": group.database.database,
                "schema": relation.namespace,
                "table": relation.name,
                **source,
            },
            "op": op,
            "ts_ms": int(time.time() * 1000),
        },
        separators=(",", ":"),
    )


def epoch_ms(moment: dt.datetime) -> int:
    """A moment in epoch milliseconds (Debezium's ``ts_ms``)."""
    return int(moment.timestamp() * 1000)
