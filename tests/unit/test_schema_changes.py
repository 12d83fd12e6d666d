"""A captured table's schema-change events, and how a run holds them against the config.

Pure logic (no Spark, no database): the events' shape, the column diff, the database type
names read through the type registry, and each rule of :func:`shape_problems`. The
capture tests (``test_capture.py``) land real events from PostgreSQL and MariaDB and run
a date through dbt with them.
"""

from __future__ import annotations

import json

import pytest

from hashcdc.column_types import from_database_type
from hashcdc.config import parse_table_config
from hashcdc.pipeline.evolution.schema_changes import (
    column_changes,
    read_schema_changes,
    schema_change_event,
    shape_problems,
)

DATE = "2024-01-02"


@pytest.mark.parametrize(
    ("database_type", "expected"),
    [
        ("integer", "int"),
        ("int(11)", "int"),
        ("int(10) unsigned", "bigint"),
        ("smallint unsigned", "int"),
        ("numeric(12,2)", "decimal(12,2)"),
        ("decimal(38,0)", "decimal(38,0)"),
        ("character varying(20)", "string"),
        ("longtext", "string"),
        ("timestamp(3) with time zone", "timestamp"),
        ("datetime(6)", "timestamp"),
        ("double precision", "double"),
        ("real", "float"),
        ("boolean", "boolean"),
        ("numeric", None),  # any number of digits: no decimal(p,s) holds it
        ("integer[]", None),
        ("bytea", None),
    ],
)
def test_a_database_type_reads_through_the_registry(database_type: str, expected: str) -> None:
    assert from_database_type(database_type) == expected


def _table(**amount: object) -> object:
    config = {
        "name": "orders",
        "extract_type": "changes",
        "source": {"path": "landing/orders/{business_date}", "format": "debezium"},
        "changes": {"sequence_by": ["source.commit_lsn", "source.lsn"]},
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "amount", "type": "decimal(10,2)", **amount},
            {"name": "note", "type": "string"},
        ],
    }
    table, problems = parse_table_config(config, "tables/orders.yml")
    assert table is not None, problems
    return table


def _event(*changes: dict) -> dict:
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "orders",
              "commit_lsn": 7, "lsn": 0}  # fmt: skip
    line = schema_change_event(
        source, ("public", "orders"), [("id", "integer")], ["id"], [*changes]
    )
    return read_schema_changes([line])[0]


def test_the_event_is_debeziums_schema_change_with_the_column_diff() -> None:
    before = [("id", "integer"), ("amount", "numeric(10,2)"), ("note", "text")]
    after = [("id", "integer"), ("amount", "numeric(12,2)"), ("channel", "text")]
    changes = column_changes(before, after)
    assert changes == [
        {"change": "column added", "column": "channel", "type": "text"},
        {"change": "column dropped", "column": "note", "type": "text"},
        {"change": "column type changed", "column": "amount",
         "from": "numeric(10,2)", "to": "numeric(12,2)"},
    ]  # fmt: skip
    source = {"db": "shop", "schema": "public", "table": "orders", "commit_lsn": 9, "ts_ms": 1}
    event = json.loads(schema_change_event(source, ("public", "orders"), after, ["id"], changes))
    table_change = event["tableChanges"][0]
    assert (event["databaseName"], event["schemaName"], event["ts_ms"]) == ("shop", "public", 1)
    assert table_change["type"] == "ALTER" and table_change["id"] == '"public"."orders"'
    assert table_change["table"]["primaryKeyColumnNames"] == ["id"]
    assert [c["typeName"] for c in table_change["table"]["columns"]] == [
        "integer",
        "numeric(12,2)",
        "text",
    ]


def test_an_added_column_is_a_notice_typed_from_the_source() -> None:
    review = shape_problems(
        _table(), [_event({"change": "column added", "column": "channel", "type": "int4"})], DATE
    )
    assert not review.refusals and review.announced == {"channel"}
    assert "{name: channel, type: 'int', added: '2024-01-02'}" in review.notices[0]


def test_a_dropped_column_is_refused_until_the_config_says_removed() -> None:
    dropped = _event({"change": "column dropped", "column": "amount", "type": "numeric(10,2)"})
    refusals = shape_problems(_table(), [dropped], DATE).refusals
    assert len(refusals) == 1 and "removed: '2024-01-02'" in refusals[0], refusals
    assert "public.orders at position 7" in refusals[0]
    assert not shape_problems(_table(removed=DATE), [dropped], DATE).refusals
    # A dropped and an added column of one type: perhaps a rename, and the hint says how.
    renamed = _event(
        {"change": "column added", "column": "total", "type": "numeric(10,2)"},
        {"change": "column dropped", "column": "amount", "type": "numeric(10,2)"},
    )
    assert "renamed_from: amount" in shape_problems(_table(), [renamed], DATE).refusals[0]


@pytest.mark.parametrize(
    ("new_type", "config_type", "refused_with"),
    [
        ("numeric(12,2)", "decimal(10,2)", "type: 'decimal(12,2)'"),  # a widening to write
        ("numeric(12,2)", "decimal(12,2)", None),  # the config says it already
        ("numeric(8,2)", "decimal(10,2)", None),  # narrower at the source: the config holds it
        ("text", "decimal(10,2)", "hashcdc replay --from"),  # the lake cannot follow
        ("integer[]", "decimal(10,2)", "cannot represent"),
    ],
)
def test_a_retyped_column_is_held_against_the_config_type(
    new_type: str, config_type: str, refused_with: str | None
) -> None:
    retyped = _event(
        {
            "change": "column type changed",
            "column": "amount",
            "from": "numeric(10,2)",
            "to": new_type,
        }  # fmt: skip
    )
    refusals = shape_problems(_table(type=config_type), [retyped], DATE).refusals
    if refused_with is None:
        assert not refusals
    else:
        assert len(refusals) == 1 and refused_with in refusals[0], refusals


def test_a_widened_float_says_since_when() -> None:
    retyped = _event(
        {"change": "column type changed", "column": "amount", "from": "real", "to": "float8"}
    )
    refusal = shape_problems(_table(type="float"), [retyped], DATE).refusals[0]
    assert "widened: {from: float, since: '2024-01-02'}" in refusal


def test_a_renamed_or_dropped_table_is_a_notice() -> None:
    review = shape_problems(
        _table(),
        [_event({"change": "table renamed", "from": "public.orders", "to": "public.orders_v2"})],
        DATE,
    )
    assert not review.refusals and "renamed to public.orders_v2" in review.notices[0]
