"""Change events in the shapes Debezium's connectors document, over three business dates.

Four tables, each fed the way a user lands a connector's topic (every date's folder also
holds every earlier date's files again, as an at-least-once delivery does):

* ``pg_customers``: PostgreSQL envelopes without schemas. The initial snapshot's reads all
  carry one ``lsn`` and are landed over two dates (the snapshot's edge); ``REPLICA
  IDENTITY DEFAULT`` sends an unchanged TOASTed ``bio`` as ``__debezium_unavailable_value``
  in updates and deletes; tombstones in both of Kafka's JSON forms follow the delete.
* ``mysql_products``: MySQL envelopes *with* the schema wrapper: ``precise`` decimals as
  base64 bytes (one negative), ``io.debezium.time.Date`` / ``Timestamp`` /
  ``ZonedTimestamp``; the snapshot's reads share one binlog position, which the first
  streamed update shares too; a multi-row statement updates two rows at one position; a
  delete's before image holds a value that does not decode.
* ``oracle_orders``: Oracle's upper-case field names (``source_name``), decimals without
  schemas (``encoding``: a ``VariableScaleDecimal`` and a ``precise`` decimal), ``scn``
  as text, a key-only delete and a tombstone.
* ``mssql_items``: SQL Server's snapshot reads carry ``commit_lsn`` only (no ``change_lsn``
  or ``event_serial_no``: declared ``missing: lowest``); streamed changes all three.
* ``mysql_flat``: the flattened new-record-state form ordered by ``[__file, __pos,
  __row]`` (binlog file names are text); a snapshot whose reads span all three dates.
"""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

DATES = ["2024-09-01", "2024-09-02", "2024-09-03"]
PLACEHOLDER = "__debezium_unavailable_value"
PG_LSN = 33227720
WRAPPED_TOMBSTONE = '{"schema": null, "payload": null}'


def _decimal_bytes(unscaled: int) -> str:
    """A Kafka Connect Decimal's value: the two's-complement unscaled integer, base64."""
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode("ascii")


def _lines(*events: Any) -> str:
    return "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events)


def _deliver(project: Any, table: str, day: int) -> None:
    """Write the date's files and every earlier date's files again."""
    for earlier in range(day + 1):
        for name, text in DELIVERIES[table][earlier].items():
            project.write_text(f"landing/{table}/{DATES[day]}/d{earlier}_{name}", text)


# -- PostgreSQL -------------------------------------------------------------------------


def _pg(op: str, lsn: int, before: Any, after: Any, snapshot: str = "false") -> dict:
    source = {
        "version": "2.7.0.Final",
        "connector": "postgresql",
        "name": "dbserver1",
        "ts_ms": 1725148800000,
        "snapshot": snapshot,
        "db": "postgres",
        "schema": "inventory",
        "table": "customers",
        "txId": 780,
        "lsn": lsn,
        "xmin": None,
    }
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1725148800500}


def _customer(id_: int, first_name: str, email: str, bio: str) -> dict:
    return {"id": id_, "first_name": first_name, "email": email, "bio": bio}


PG_DAYS = [
    {
        "snapshot-1.json": _lines(
            _pg("r", PG_LSN, None, _customer(1001, "Sally", "sally@example.com", "bio A"), "first"),
            _pg(
                "r", PG_LSN, None, _customer(1002, "George", "gbailey@foobar.com", "bio B"), "true"
            ),
        )
    },
    {
        # The snapshot's tail, at the same lsn, lands a day later; streaming begins.
        "snapshot-2.json": _lines(
            _pg("r", PG_LSN, None, _customer(1003, "Edward", "ed@walker.com", "bio C"), "true"),
            _pg("r", PG_LSN, None, _customer(1004, "Anne", "annek@noanswer.org", "bio D"), "last"),
        ),
        "stream-1.json": _lines(
            _pg("u", PG_LSN + 80, None, _customer(1001, "Sallie", "sally@example.com", PLACEHOLDER))
        ),
    },
    {
        "stream-2.json": _lines(
            _pg("u", PG_LSN + 100, None, _customer(1002, "George", "george@b.com", PLACEHOLDER)),
            # Only the unavailable column: nothing changed.
            _pg("u", PG_LSN + 150, None, _customer(1003, "Edward", "ed@walker.com", PLACEHOLDER)),
            _pg(
                "d",
                PG_LSN + 200,
                {"id": 1004, "first_name": None, "email": None, "bio": PLACEHOLDER},
                None,
            ),
            WRAPPED_TOMBSTONE,
            "null",
            _pg("c", PG_LSN + 300, None, _customer(1005, "Kenneth", "kh@example.com", "bio E")),
            _pg("u", PG_LSN + 400, None, _customer(1005, "Ken", "kh@example.com", PLACEHOLDER)),
        )
    },
]

# -- MySQL, with the schema wrapper ---------------------------------------------------------

_MYSQL_FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "field": "price",
    },
    {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1,
     "field": "released"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "version": 1,
     "field": "updated_at"},
    {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp",
     "version": 1, "field": "created_at"},
]  # fmt: skip
_MYSQL_SCHEMA = {
    "type": "struct",
    "fields": [
        {"type": "struct", "fields": _MYSQL_FIELDS, "optional": True,
         "name": "dbserver1.inventory.products.Value", "field": "before"},
        {"type": "struct", "fields": _MYSQL_FIELDS, "optional": True,
         "name": "dbserver1.inventory.products.Value", "field": "after"},
        {"type": "string", "optional": False, "field": "op"},
    ],
    "optional": False,
    "name": "dbserver1.inventory.products.Envelope",
}  # fmt: skip


def _mysql(op: str, file: int, pos: int, row: int, before: Any, after: Any, snapshot: str) -> dict:
    source = {
        "version": "2.7.0.Final",
        "connector": "mysql",
        "name": "dbserver1",
        "ts_ms": 1725148800000,
        "snapshot": snapshot,
        "db": "inventory",
        "table": "products",
        "server_id": 223344,
        "gtid": None,
        "file": f"mysql-bin.{file:06d}",
        "pos": pos,
        "row": row,
        "thread": 7,
        "query": None,
    }
    payload = {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1}
    return {"schema": _MYSQL_SCHEMA, "payload": payload}


def _product(id_: int, name: str, cents: int, released_days: int, updated_ms: int) -> dict:
    return {
        "id": id_,
        "name": name,
        "price": _decimal_bytes(cents),
        "released": released_days,
        "updated_at": updated_ms,
        "created_at": "2024-06-10T08:00:00Z",
    }


SCOOTER = _product(101, "scooter", 314, 19000, 1718000000000)
BATTERY = _product(102, "car battery", 810, 19001, 1718000000000)
DRILL = _product(103, "drill bits", 800, 19002, 1718000000000)
MYSQL_DAYS = [
    {
        "snapshot-1.json": _lines(
            _mysql("r", 3, 154, 0, None, SCOOTER, "first"),
            _mysql("r", 3, 154, 0, None, BATTERY, "true"),
        )
    },
    {
        "snapshot-2.json": _lines(_mysql("r", 3, 154, 0, None, DRILL, "last")),
        "stream-1.json": _lines(
            # The first streamed change sits at the snapshot's binlog position.
            _mysql("u", 3, 154, 0, SCOOTER, {**SCOOTER, "price": _decimal_bytes(299)}, "false"),
            # One UPDATE statement, two rows: one binlog event, rows 0 and 1.
            _mysql("u", 3, 300, 0, BATTERY, {**BATTERY, "price": _decimal_bytes(750)}, "false"),
            _mysql("u", 3, 300, 1, DRILL, {**DRILL, "price": _decimal_bytes(-125)}, "false"),
        ),
    },
    {
        "stream-2.json": _lines(
            # The before image's price does not decode: a delete needs its key only.
            _mysql("d", 4, 4, 0, {**BATTERY, "price": "not base64!"}, None, "false"),
            _mysql(
                "c", 4, 90, 0, None, _product(104, "hammer", 1999, 19737, 1718000001000), "false"
            ),
        )
    },
]

# -- Oracle: upper-case names, no schemas -------------------------------------------------


def _oracle(op: str, scn: int, before: Any, after: Any) -> dict:
    source = {
        "version": "2.7.0.Final",
        "connector": "oracle",
        "name": "server1",
        "ts_ms": 1725148800000,
        "snapshot": "false",
        "db": "ORCLPDB1",
        "schema": "DEBEZIUM",
        "table": "ORDERS",
        "txId": "6a000c0043000000",
        "scn": str(scn),
        "commit_scn": str(scn + 1),
    }
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1}


# io.debezium.data.VariableScaleDecimal 138.456, as Debezium's documentation shows it.
TOTAL_138_456 = {"scale": 3, "value": "AhzY"}


def _order(order_id: int, customer: str, total: dict, discount_cents: int) -> dict:
    return {
        "ORDER_ID": order_id,
        "CUSTOMER_NAME": customer,
        "TOTAL": total,
        "DISCOUNT": _decimal_bytes(discount_cents),
    }


ORACLE_DAYS = [
    {"events.json": _lines(_oracle("c", 1000, None, _order(1, "ACME", TOTAL_138_456, 300)))},
    {
        "events.json": _lines(
            _oracle(
                "u",
                1100,
                _order(1, "ACME", TOTAL_138_456, 300),
                _order(1, "ACME", {"scale": 1, "value": "BNI="}, 300),
            ),
            _oracle("c", 1200, None, _order(2, "Initech", {"scale": 0, "value": "ZA=="}, 0)),
        )
    },
    {"events.json": _lines(_oracle("d", 1300, {"ORDER_ID": 2}, None), WRAPPED_TOMBSTONE)},
]  # fmt: skip

# -- SQL Server ---------------------------------------------------------------------------


def _mssql(op: str, commit: str, change: str | None, serial: int | None, row: Any) -> dict:
    source = {
        "version": "2.7.0.Final",
        "connector": "sqlserver",
        "name": "server1",
        "ts_ms": 1725148800000,
        "snapshot": "true" if op == "r" else "false",
        "db": "testDB",
        "schema": "dbo",
        "table": "items",
        "change_lsn": change,
        "commit_lsn": commit,
        "event_serial_no": serial,
    }
    before, after = (row, None) if op == "d" else (None, row)
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1}


SNAPSHOT_LSN = "00000025:00000d98:00a2"
MSSQL_DAYS = [
    {
        "snapshot.json": _lines(
            _mssql("r", SNAPSHOT_LSN, None, None, {"id": 1, "name": "bolt"}),
            _mssql("r", SNAPSHOT_LSN, None, None, {"id": 2, "name": "nut"}),
        )
    },
    {
        "snapshot.json": _lines(_mssql("r", SNAPSHOT_LSN, None, None, {"id": 3, "name": "gear"})),
        "stream.json": _lines(
            _mssql("u", "00000027:00000758:0005", "00000027:00000758:0003", 2,
                   {"id": 1, "name": "bolt M8"}),
        ),
    },
    {
        "stream.json": _lines(
            _mssql("d", "00000028:00000010:0002", "00000028:00000010:0001", 1,
                   {"id": 2, "name": "nut"}),
        )
    },
]  # fmt: skip

# -- MySQL, flattened (ExtractNewRecordState with add.fields=op,file,pos,row) --------------


def _flat(op: str, file: int, pos: int, id_: int, qty: int | None, deleted: bool = False) -> str:
    row = {"id": id_, "qty": qty, "__op": op, "__file": f"mysql-bin.{file:06d}", "__pos": pos}
    return json.dumps({**row, "__row": 0, "__deleted": str(deleted).lower()})


FLAT_DAYS = [
    {"events.json": _lines(_flat("r", 9, 500, 1, 5), _flat("r", 9, 500, 2, 7))},
    {"events.json": _lines(_flat("r", 9, 500, 3, 1))},
    {
        "events.json": _lines(
            _flat("r", 9, 500, 4, 2),
            _flat("u", 10, 4, 1, 6),  # a later binlog file, a smaller position
            _flat("d", 10, 50, 2, 7, deleted=True),
        )
    },
]

DELIVERIES = {
    "pg_customers": PG_DAYS,
    "mysql_products": MYSQL_DAYS,
    "oracle_orders": ORACLE_DAYS,
    "mssql_items": MSSQL_DAYS,
    "mysql_flat": FLAT_DAYS,
}


def _table(name: str, columns: list[dict], sequence_by: list, fmt: str = "debezium") -> dict:
    return {
        "name": name,
        "extract_type": "changes",
        "source": {"path": f"landing/{name}/{{business_date}}/*", "format": fmt},
        "changes": {"sequence_by": sequence_by},
        "columns": columns,
    }


TABLES = [
    _table(
        "pg_customers",
        [
            {"name": "id", "type": "int", "key": True},
            {"name": "first_name", "type": "string"},
            {"name": "email", "type": "string"},
            {"name": "bio", "type": "string"},
        ],
        ["source.lsn"],
    ),
    _table(
        "mysql_products",
        [
            {"name": "id", "type": "int", "key": True},
            {"name": "name", "type": "string"},
            {"name": "price", "type": "decimal(10,2)"},
            {"name": "released", "type": "date"},
            {"name": "updated_at", "type": "timestamp"},
            {"name": "created_at", "type": "timestamp"},
        ],
        ["source.file", "source.pos", "source.row"],
    ),
    _table(
        "oracle_orders",
        [
            {"name": "order_id", "type": "bigint", "key": True, "source_name": "ORDER_ID"},
            {"name": "customer", "type": "string", "source_name": "CUSTOMER_NAME"},
            {
                "name": "total",
                "type": "decimal(12,3)",
                "source_name": "TOTAL",
                "encoding": "debezium_variable_decimal",
            },
            {
                "name": "discount",
                "type": "decimal(6,2)",
                "source_name": "DISCOUNT",
                "encoding": "debezium_decimal",
            },
        ],
        [{"field": "source.scn", "type": "bigint"}],
    ),
    _table(
        "mssql_items",
        [{"name": "id", "type": "int", "key": True}, {"name": "name", "type": "string"}],
        [
            {"field": "source.commit_lsn", "type": "string"},
            {"field": "source.change_lsn", "type": "string", "missing": "lowest"},
            {"field": "source.event_serial_no", "missing": "lowest"},
        ],
    ),
    _table(
        "mysql_flat",
        [{"name": "id", "type": "int", "key": True}, {"name": "qty", "type": "int"}],
        ["__file", "__pos", "__row"],
        "debezium_flat",
    ),
]

UPDATED = "2024-06-10 06:13:20"  # io.debezium.time.Timestamp 1718000000000
CREATED = "2024-06-10 08:00:00"  # io.debezium.time.ZonedTimestamp 2024-06-10T08:00:00Z
# Every row of current and of each date's history, per table: (columns, rows).
EXPECTED_CURRENT = {
    "pg_customers": (
        "id, first_name, email, bio, operation, cast(eff_start_date as string)",
        [
            (1001, "Sallie", "sally@example.com", "bio A", "X", DATES[1]),
            (1002, "George", "george@b.com", "bio B", "U", DATES[2]),
            (1003, "Edward", "ed@walker.com", "bio C", "N", DATES[1]),
            (1005, "Ken", "kh@example.com", "bio E", "I", DATES[2]),
        ],
    ),
    "mysql_products": (
        "id, name, price, cast(released as string), cast(updated_at as string), "
        "cast(created_at as string), operation",
        [
            (101, "scooter", Decimal("2.99"), "2022-01-08", UPDATED, CREATED, "X"),
            (103, "drill bits", Decimal("-1.25"), "2022-01-10", UPDATED, CREATED, "X"),
            (104, "hammer", Decimal("19.99"), "2024-01-15", "2024-06-10 06:13:21", CREATED, "I"),
        ],
    ),
    "oracle_orders": (
        "order_id, customer, total, discount, operation",
        [(1, "ACME", Decimal("123.400"), Decimal("3.00"), "X")],
    ),
    "mssql_items": ("id, name, operation", [(1, "bolt M8", "X"), (3, "gear", "X")]),
    "mysql_flat": ("id, qty, operation", [(1, 6, "U"), (3, 1, "X"), (4, 2, "I")]),
}  # fmt: skip
EXPECTED_HISTORY = {
    "pg_customers": (
        "id, first_name, email, bio",
        [
            [("I", 1001, "Sally", "sally@example.com", "bio A"),
             ("I", 1002, "George", "gbailey@foobar.com", "bio B")],
            [("I", 1003, "Edward", "ed@walker.com", "bio C"),
             ("I", 1004, "Anne", "annek@noanswer.org", "bio D"),
             ("U", 1001, "Sallie", "sally@example.com", "bio A")],
            [("U", 1002, "George", "george@b.com", "bio B"),
             ("D", 1004, "Anne", "annek@noanswer.org", "bio D"),
             ("I", 1005, "Ken", "kh@example.com", "bio E")],
        ],
    ),
    "mysql_products": (
        "id, price",
        [
            [("I", 101, Decimal("3.14")), ("I", 102, Decimal("8.10"))],
            [("I", 103, Decimal("-1.25")), ("U", 101, Decimal("2.99")),
             ("U", 102, Decimal("7.50"))],
            [("D", 102, Decimal("7.50")), ("I", 104, Decimal("19.99"))],
        ],
    ),
    "oracle_orders": (
        "order_id, total",
        [
            [("I", 1, Decimal("138.456"))],
            [("U", 1, Decimal("123.400")), ("I", 2, Decimal("100.000"))],
            [("D", 2, Decimal("100.000"))],
        ],
    ),
    "mssql_items": (
        "id, name",
        [
            [("I", 1, "bolt"), ("I", 2, "nut")],
            [("I", 3, "gear"), ("U", 1, "bolt M8")],
            [("D", 2, "nut")],
        ],
    ),
    "mysql_flat": (
        "id, qty",
        [
            [("I", 1, 5), ("I", 2, 7)],
            [("I", 3, 1)],
            [("U", 1, 6), ("D", 2, 7), ("I", 4, 2)],
        ],
    ),
}  # fmt: skip


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


def test_debezium_connector_shapes_over_three_dates(project: Any, capfd: Any) -> None:
    for table in TABLES:
        project.add_table(table)
    for day, business_date in enumerate(DATES):
        for name in DELIVERIES:
            _deliver(project, name, day)
        outcome = project.build(business_date)
        assert outcome.success, outcome.text
        for name, (columns, days) in EXPECTED_HISTORY.items():
            rows = project.rows(
                f"select operation, {columns} from {name}_history "
                f"where business_date = date'{business_date}'"
            )
            actual = [tuple(r.values()) for r in rows]
            assert _sorted(actual) == _sorted(days[day]), (name, business_date)
        output = capfd.readouterr().out
        if day == 2:
            # Tombstones are counted, never rejected.
            assert (
                "table 'pg_customers', business date 2024-09-03: 2 tombstone(s) ignored" in output
            )
            assert (
                "table 'oracle_orders', business date 2024-09-03: 1 tombstone(s) ignored" in output
            )
    for name, (columns, expected) in EXPECTED_CURRENT.items():
        actual = [tuple(r.values()) for r in project.rows(f"select {columns} from {name}_current")]
        assert _sorted(actual) == _sorted(expected), name
    for name in DELIVERIES:
        assert project.rows(f"select * from {name}_rejects") == [], name


def test_a_sequence_field_of_the_wrong_type_is_named_with_the_fix(project: Any) -> None:
    table = _table(
        "flat_typed",
        [{"name": "id", "type": "int", "key": True}, {"name": "qty", "type": "int"}],
        [{"field": "__file", "type": "bigint"}, "__pos"],
        "debezium_flat",
    )
    project.add_table(table)
    project.write_text(
        f"landing/flat_typed/{DATES[0]}/events.json", _lines(_flat("c", 9, 500, 1, 5))
    )
    outcome = project.build(DATES[0])
    assert not outcome.success
    assert (
        "sequence field '__file' (bigint): value 'mysql-bin.000009' does not cast; if every "
        "event fails like this, the field is text: give it as {field: __file, type: string} "
        "in changes.sequence_by"
    ) in outcome.text


def test_binary_decimals_decode_exactly(spark: Any) -> None:
    from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

    from hashcdc.pipeline.casting import debezium_decimal_text

    biggest = 10**38 - 1
    cases = [
        (_decimal_bytes(0), 0, "0"),
        (_decimal_bytes(-1), 0, "-1"),
        (_decimal_bytes(-128), 2, "-1.28"),
        (_decimal_bytes(128), 2, "1.28"),
        (_decimal_bytes(5), 4, "0.0005"),
        (_decimal_bytes(biggest), 0, str(biggest)),
        (_decimal_bytes(-biggest), 10, "-" + str(biggest)[:-10] + "." + str(biggest)[-10:]),
        (_decimal_bytes(10**38), 0, None),  # 39 digits: no decimal holds it
        ("not base64!", 2, None),
        ("", 2, None),
    ]
    frame = spark.createDataFrame(
        [(encoded, scale) for encoded, scale, _ in cases], "encoded string, scale int"
    )
    decoded = frame.select(debezium_decimal_text(F.col("encoded"), F.col("scale")).alias("t"))
    actual = [None if row["t"] is None else Decimal(row["t"]) for row in decoded.collect()]
    assert actual == [None if text is None else Decimal(text) for *_, text in cases]
    # The text casts to the configured type like any decimal text.
    typed = frame.select(
        debezium_decimal_text(F.col("encoded"), F.col("scale")).try_cast("decimal(10,4)")
    ).collect()
    assert typed[2][0] == Decimal("-1.2800") and typed[4][0] == Decimal("0.0005")


def test_message_arrays_hold_the_present_messages_in_order(spark: Any) -> None:
    from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

    from hashcdc.pipeline.casting import present_messages

    frame = spark.createDataFrame(
        [(1, None, None), (2, "a", None), (3, None, "b"), (4, "a", "b")],
        "id int, first string, second string",
    )
    arrays = frame.select(
        "id", present_messages([F.col("first"), F.col("second")]).alias("messages")
    ).orderBy("id")
    assert [row["messages"] for row in arrays.collect()] == [None, ["a"], ["b"], ["a", "b"]]


def test_decimals_decode_by_their_shape_without_a_schema(project: Any) -> None:
    """Issue 25: a VariableScaleDecimal without the schema wrapper, and a Decimal whose
    schema gives its scale landing in a text column."""
    name = "pg_numeric"
    table = _table(
        name,
        [
            {"name": "id", "type": "int", "key": True},
            {"name": "amount", "type": "decimal(10,3)"},
            {"name": "label", "type": "string"},
        ],
        ["source.lsn"],
    )
    project.add_table({**table, "max_reject_fraction": 0.5})
    fields = [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
         "version": 1, "parameters": {"scale": "3"}, "field": "label"},
    ]  # fmt: skip
    schema = {
        "type": "struct",
        "fields": [
            {"type": "struct", "fields": fields, "optional": True, "field": "after"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    wrapped = {
        "schema": schema,
        "payload": {"op": "c", "after": {"id": 3, "label": "AhzY"}, "source": {"lsn": 3}},
    }
    project.write_text(
        f"landing/{name}/{DATES[0]}/events.json",
        _lines(
            {
                "op": "c",
                "after": {"id": 1, "amount": {"scale": 3, "value": "AhzY"}},
                "source": {"lsn": 1},
            },
            {
                "op": "c",
                "after": {"id": 2, "amount": {"scale": 4, "value": "AhzY"}},
                "source": {"lsn": 2},
            },
            wrapped,
            {
                "op": "c",
                "after": {"id": 4, "amount": {"scale": 0, "value": "/w=="}},
                "source": {"lsn": 4},
            },
        ),  # fmt: skip
    )
    outcome = project.build(DATES[0])
    assert outcome.success, outcome.text
    current = project.rows(f"select id, amount, label from {name}_current order by id")
    assert [tuple(row.values()) for row in current] == [
        (1, Decimal("138.456"), None),
        (3, None, "138.456"),
        (4, Decimal("-1.000"), None),
    ]
    rejects = project.rows(f"select reasons from {name}_rejects")
    assert [row["reasons"] for row in rejects] == [
        [
            'column \'amount\' (decimal(10,3)): value \'{"scale":4,"value":"AhzY"}\' has '
            "scale 4, more than the 3 of decimal(10,3)"
        ]
    ]
