"""Change-feed event formats and ordering rules through the real pipeline.

One project, three tables: the flattened new-record-state JSON, a csv feed with operation
and sequence columns (key-only deletes, a truncate, stale and conflicting events) and a
Debezium feed ordered by MySQL binlog position with the audit history.
"""

from __future__ import annotations

import json
from typing import Any

from conftest import csv_text
from feed_events import Event, feed_config, json_lines

from hashcdc.cli import main

DATES = ["2024-06-01", "2024-06-02", "2024-06-03", "2024-06-04"]
ORDER = [
    {"name": "id", "type": "int", "key": True},
    {"name": "amount", "type": "decimal(10,2)"},
]
CSV_HEADER = ["id", "amount", "updated_ms", "op", "change_seq"]


def _flat(**fields: Any) -> str:
    return json.dumps(fields) + "\n"


def _binlog(op: str, before: Any, after: Any, file: int, pos: int) -> Event:
    source = {"connector": "mysql", "file": f"mysql-bin.{file:06d}", "pos": pos, "row": 0}
    return Event(op, before, after, 0, source)


def _amounts(project: Any, relation: str) -> dict[int, str]:
    rows = project.rows(f"select id, cast(amount as string) as amount from {relation}")
    return {r["id"]: r["amount"] for r in rows}


def _history(project: Any, table: str, business_date: str) -> list[tuple]:
    rows = project.rows(
        f"select operation, id, cast(amount as string) as amount from {table}_history "
        f"where business_date = date'{business_date}'"
    )
    return sorted(tuple(r.values()) for r in rows)


def test_event_formats_ordering_and_bad_events(project: Any, capfd: Any) -> None:
    project.add_table(
        {
            **feed_config("orders_flat", ORDER, "debezium_flat", sequence_by=["__lsn"]),
            "max_rejects": 5,
        }
    )
    csv_columns = [
        *ORDER,
        {"name": "updated_ms", "type": "timestamp", "format": "epoch_millis", "ignore": True},
    ]
    csv_table = feed_config("orders_csv", csv_columns, "csv", sequence_by=["change_seq"])
    csv_table["changes"]["operation_column"] = "op"
    project.add_table(csv_table)
    project.add_table(
        feed_config(
            "orders_binlog",
            ORDER,
            sequence_by=["source.file", "source.pos"],
            history="audit",
        )
    )

    def deliver_csv(business_date: str, rows: list[list[Any]], name: str = "events.csv") -> None:
        project.write_text(f"landing/orders_csv/{business_date}/{name}", csv_text(CSV_HEADER, rows))

    # Day 1: creates in every format.
    project.write_text(
        f"landing/orders_flat/{DATES[0]}/events.json",
        _flat(id=1, amount="10.50", __op="c", __lsn=10, __deleted="false")
        + _flat(id=2, amount="20.00", __op="c", __lsn=11, __deleted="false")
        + "\n"
        + _flat(id=3, amount=3, __op="r", __lsn=12, __deleted="false"),
    )
    deliver_csv(
        DATES[0],
        [
            [1, "1.00", 1717200000000, "insert", 10],
            [2, "2.00", 1717200000000, "insert", 20],
            [3, "3.00", 1717200000000, "INSERT", 30],
        ],
    )
    project.write_text(
        f"landing/orders_binlog/{DATES[0]}/events.json",
        json_lines(
            [
                # A later binlog file with a smaller position comes after: file first.
                _binlog("u", {"id": 1, "amount": "1.00"}, {"id": 1, "amount": "1.50"}, 10, 4),
                _binlog("c", None, {"id": 1, "amount": "1.00"}, 9, 900),
            ]
        ),
    )
    outcome = project.build(DATES[0])
    assert outcome.success, outcome.text
    assert _amounts(project, "orders_flat_current") == {1: "10.50", 2: "20.00", 3: "3.00"}
    assert _amounts(project, "orders_csv_current") == {1: "1.00", 2: "2.00", 3: "3.00"}
    assert _amounts(project, "orders_binlog_current") == {1: "1.50"}
    assert project.rows(
        "select operation, event_op, event_sequence.source_file as file, "
        "event_sequence.source_pos as pos from orders_binlog_history order by file, pos"
    ) == [
        {"operation": "I", "event_op": "c", "file": "mysql-bin.000009", "pos": 900},
        {"operation": "U", "event_op": "u", "file": "mysql-bin.000010", "pos": 4},
    ]

    # Day 2: updates, deletes (with the row, with the key only), upserts, bad events.
    project.write_text(
        f"landing/orders_flat/{DATES[1]}/events.json",
        _flat(id=1, amount="11.00", __op="u", __lsn=20, __deleted="false")
        + _flat(id=2, amount="20.00", __op="d", __lsn=21, __deleted="true")
        + _flat(id=4, amount="4.00", __lsn=22, __deleted="false")  # no __op: an upsert
        + "this is not json\n"
        + _flat(id=9, amount="9.00", __op="x", __lsn=23)
        + _flat(id=8, amount="8.00", __op="c"),
    )
    deliver_csv(DATES[1], [[3, None, None, "delete", 40], [2, "2.50", 1717300000000, "u", 60]])
    project.write_text(
        f"landing/orders_binlog/{DATES[1]}/events.json",
        json_lines(
            [
                # Older than the watermark (file 10, pos 4): already past, skipped.
                _binlog("c", None, {"id": 2, "amount": "2.00"}, 9, 950),
                _binlog("d", {"id": 1, "amount": "1.50"}, None, 10, 120),
                _binlog("r", None, {"id": 3, "amount": "3.00"}, 10, 200),
            ]
        ),
    )
    outcome = project.build(DATES[1])
    assert outcome.success, outcome.text
    assert (
        "table 'orders_binlog', business date 2024-06-02: 1 event(s) at or below the watermark "
        "('mysql-bin.000010', 4) were skipped" in capfd.readouterr().out
    )
    assert _amounts(project, "orders_flat_current") == {1: "11.00", 3: "3.00", 4: "4.00"}
    assert _history(project, "orders_flat", DATES[1]) == [
        ("D", 2, "20.00"),
        ("I", 4, "4.00"),
        ("U", 1, "11.00"),
    ]
    rejects = project.rows(
        "select row_number, line_number, reasons, raw_line from orders_flat_rejects "
        f"where business_date = date'{DATES[1]}' order by row_number"
    )
    assert [(r["row_number"], r["line_number"]) for r in rejects] == [(4, 4), (5, 5), (6, 6)]
    assert "not JSON" in rejects[0]["reasons"][0] and rejects[0]["raw_line"] == "this is not json"
    assert "operation 'x' is not one of" in rejects[1]["reasons"][0]
    assert rejects[2]["reasons"] == ["sequence field '__lsn' is missing"]
    assert _amounts(project, "orders_csv_current") == {1: "1.00", 2: "2.50"}
    assert _history(project, "orders_csv", DATES[1]) == [("D", 3, "3.00"), ("U", 2, "2.50")]
    assert _amounts(project, "orders_binlog_current") == {3: "3.00"}
    assert [
        (r["operation"], r["id"])
        for r in project.rows(
            "select operation, id from orders_binlog_history "
            f"where business_date = date'{DATES[1]}' order by event_sequence"
        )
    ] == [("D", 1), ("R", 3)]
    assert [
        (r["operation"], str(r["valid_from"]), str(r["valid_to"]), r["is_current"])
        for r in project.rows(
            "select * from orders_binlog_scd2 where keyhash = "
            "(select keyhash from orders_binlog_history where id = 1 limit 1) "
            "order by valid_from, operation"
        )
    ] == [
        ("I", DATES[0], DATES[0], False),
        ("U", DATES[0], DATES[1], False),
        ("D", DATES[1], "None", False),
    ]

    # Day 3 (csv only): a truncate voids everything before it; stale events are skipped.
    deliver_csv(
        DATES[2],
        [
            [5, "5.00", None, "insert", 80],
            [None, None, None, "truncate", 70],
            [1, "9.99", None, "update", 65],
            [2, "2.50", 1717300000000, "u", 60],  # re-sent from day 2
        ],
    )
    outcome = project.build(DATES[2], "orders_csv")
    assert outcome.success, outcome.text
    assert _amounts(project, "orders_csv_current") == {5: "5.00"}
    assert _history(project, "orders_csv", DATES[2]) == [
        ("D", 1, "1.00"),
        ("D", 2, "2.50"),
        ("I", 5, "5.00"),
    ]

    # A late event of day 2 turns up: skipped by a run, applied in order by a replay.
    deliver_csv(DATES[1], [[9, "9.00", None, "insert", 50]], name="late.csv")
    replayed = main(
        ["--project-dir", str(project.root), "replay", "--from", DATES[1], "--select", "orders_csv"]
    )
    assert replayed == 0
    assert _history(project, "orders_csv", DATES[1]) == [
        ("D", 3, "3.00"),
        ("I", 9, "9.00"),
        ("U", 2, "2.50"),
    ]
    assert ("D", 9, "9.00") in _history(project, "orders_csv", DATES[2])
    assert _amounts(project, "orders_csv_current") == {5: "5.00"}

    # Day 4: two different events of one key at one position: refused, state untouched.
    deliver_csv(DATES[3], [[5, "6.00", None, "update", 100], [5, "7.00", None, "update", 100]])
    outcome = project.build(DATES[3], "orders_csv")
    assert not outcome.success
    assert "different events of one key share a sequence (change_seq)" in outcome.text
    assert "key {'id': 5}, sequence (100,)" in outcome.text
    assert _amounts(project, "orders_csv_current") == {5: "5.00"}


def test_parquet_feed_stage_reads_operation_and_sequence_columns(spark: Any, tmp_path: Any) -> None:
    """The stage alone on a parquet feed: typed images, hashes, operations, sequences."""
    from hashcdc.config import parse_table_config
    from hashcdc.pipeline.stage import typecast_and_hash

    folder = tmp_path / "orders_pq" / DATES[0]
    spark.createDataFrame(
        [
            (1, "1.50", "I", 7, 1),
            (1, "2.00", "U", 7, 2),
            (2, None, "D", 8, 0),
            (None, None, "T", 9, 0),
        ],
        "id int, amount string, change_type string, batch bigint, seq_in_batch int",
    ).write.parquet(str(folder))
    raw = feed_config("orders_pq", ORDER, "parquet", sequence_by=["batch", "seq_in_batch"])
    raw["changes"]["operation_column"] = "change_type"
    raw["source"]["path"] = str(tmp_path / "orders_pq" / "{business_date}")
    config, problems = parse_table_config(raw, "tables/orders_pq.yml")
    assert problems == []
    stage = typecast_and_hash(spark, config.to_dict(), DATES[0])
    rows = sorted(
        stage.select(
            "id",
            stage["amount"].cast("string").alias("amount"),
            "event_op",
            "event_sequence.batch",
            "event_sequence.seq_in_batch",
            (stage["keyhash"].isNotNull()).alias("has_key"),
            (stage["nonkeyhash"].isNotNull()).alias("has_values"),
            "_row_errors",
        ).collect(),
        key=lambda r: (r["batch"], r["seq_in_batch"]),
    )
    assert [tuple(r) for r in rows] == [
        (1, "1.50", "c", 7, 1, True, True, None),
        (1, "2.00", "u", 7, 2, True, True, None),
        (2, None, "d", 8, 0, True, False, None),
        (None, None, "t", 9, 0, False, False, None),
    ]
