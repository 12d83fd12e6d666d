"""pgoutput's messages decoded, and a captured table's config checked (no server, no Spark)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from source_configs import captured_config


def _text(value: str) -> bytes:
    return value.encode() + b"\x00"


def _tuple(*values: str | None) -> bytes:
    import struct

    out = struct.pack(">h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value == "<unchanged>":
            out += b"u"
        else:
            out += b"t" + struct.pack(">i", len(value.encode())) + value.encode()
    return out


TABLE = "captured_orders"


def test_pgoutput_messages_decode() -> None:
    """The protocol's byte layouts, as PostgreSQL documents them, become messages."""
    import struct

    from hashcdc.capture import pgoutput

    microseconds = 86_400 * 1_000_000  # 2000-01-02 00:00 UTC
    begin = pgoutput.decode(b"B" + struct.pack(">QqI", 0x16_B374D848, microseconds, 42))
    assert begin == pgoutput.Begin(0x16_B374D848, dt.datetime(2000, 1, 2, tzinfo=dt.UTC), 42)
    relation = pgoutput.decode(
        b"R" + struct.pack(">I", 7) + _text("public") + _text("orders") + b"d"
        + struct.pack(">h", 2)
        + struct.pack(">b", 1) + _text("id") + struct.pack(">Ii", 23, -1)
        + struct.pack(">b", 0) + _text("notes") + struct.pack(">Ii", 25, -1)
    )  # fmt: skip
    assert isinstance(relation, pgoutput.Relation)
    assert relation.qualified_name == "public.orders"
    assert [(c.name, c.type_oid, c.is_key) for c in relation.columns] == [
        ("id", 23, True),
        ("notes", 25, False),
    ]
    insert = pgoutput.decode(b"I" + struct.pack(">I", 7) + b"N" + _tuple("1", None))
    assert insert == pgoutput.RowChange(7, "c", None, ("1", None))
    key_change = pgoutput.decode(
        b"U" + struct.pack(">I", 7) + b"K" + _tuple("1", None) + b"N" + _tuple("2", "<unchanged>")
    )
    assert key_change == pgoutput.RowChange(7, "u", ("1", None), ("2", pgoutput.UNCHANGED_TOAST))
    delete = pgoutput.decode(b"D" + struct.pack(">I", 7) + b"K" + _tuple("2", None))
    assert delete == pgoutput.RowChange(7, "d", ("2", None), None)
    assert pgoutput.decode(b"T" + struct.pack(">IbI", 1, 0, 7)) == pgoutput.Truncate((7,))
    commit = pgoutput.decode(b"C" + struct.pack(">bQQq", 0, 10, 20, microseconds))
    assert isinstance(commit, pgoutput.Commit) and (commit.commit_lsn, commit.end_lsn) == (10, 20)
    assert pgoutput.lsn_text(0x16_B374D848) == "16/B374D848"
    assert pgoutput.lsn_number("16/B374D848") == 0x16_B374D848
    with pytest.raises(ValueError, match="unknown message kind"):
        pgoutput.decode(b"Z")


def test_a_captured_table_is_checked_with_the_config() -> None:
    from hashcdc.config import parse_table_config

    config = captured_config(5432, "orders", TABLE)
    table, problems = parse_table_config(config, f"tables/{TABLE}.yml")
    assert problems == [] and table is not None
    assert table.source.database is not None and table.source.database.slot == "hashcdc_orders"
    config["source"] = {**config["source"], "format": "csv"}
    config["changes"] = {"sequence_by": ["source.lsn"]}
    _, problems = parse_table_config(config, f"tables/{TABLE}.yml")
    assert any("lands Debezium envelopes: set format: debezium" in p for p in problems)
    assert any("sequence_by: [source.commit_lsn, source.lsn]" in p for p in problems)
    # The snapshot's parallel reads: page ranges of a PostgreSQL table; none for MariaDB.
    config = captured_config(5432, "orders", TABLE)
    config["source"]["database"]["partitions"] = 4
    assert parse_table_config(config, f"tables/{TABLE}.yml")[1] == []
    config["source"]["database"].update(kind="mariadb", partition_column="id")
    _, problems = parse_table_config(config, f"tables/{TABLE}.yml")
    assert any("read on one connection" in p and "remove partitions" in p for p in problems)
    assert any("remove partition_column" in p for p in problems)


@pytest.mark.parametrize(
    ("value", "column_type", "selected"),
    [
        # What `SELECT *` shows (issue 41's third form): hours beyond a day, signed.
        (dt.timedelta(hours=-838, minutes=-59, seconds=-59), "time(3)", "-838:59:59.000"),
        (
            dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=999000),
            "time(3)",
            "838:59:59.999",
        ),
        (dt.timedelta(minutes=-10), "time", "-00:10:00"),
        # Every digit of the scale, never an exponent.
        (
            "-0.000000000000000000000000000001",
            "decimal(65,30)",
            "-0.000000000000000000000000000001",
        ),
        ("1.5", "decimal(65,30)", "1.500000000000000000000000000000"),
        ("0E-30", "decimal(65,30)", "0.000000000000000000000000000000"),
        # The column's fractional digits, as the server writes them.
        (dt.datetime(2024, 1, 1, 10), "datetime(6)", "2024-01-01 10:00:00.000000"),
        (dt.datetime(2024, 1, 1, 10, 0, 0, 125000), "timestamp(3)", "2024-01-01 10:00:00.125"),
        (dt.datetime(2024, 1, 1, 10), "datetime", "2024-01-01 10:00:00"),
        (b"a", "binary(3)", "a\x00\x00"),
        (b"\x00\x05", "bit(10)", "0000000101"),
    ],
)
def test_a_mariadb_value_lands_as_select_shows_it(
    value: object, column_type: str, selected: str
) -> None:
    import decimal

    from hashcdc.capture.mariadb_source import json_value

    if isinstance(value, str):
        value = decimal.Decimal(value)
    assert json_value(value, column_type) == selected


def test_a_capture_lands_in_one_time_zone() -> None:
    from hashcdc.capture.group import capture_group
    from hashcdc.config import parse_table_config
    from hashcdc.errors import HashcdcError

    tables = []
    for name, zone in (("orders", "Europe/Berlin"), ("items", "UTC")):
        config = captured_config(5432, name, name)
        config["changes"] = {**config["changes"], "time_zone": zone}
        config["source"]["database"]["slot"] = "hashcdc_shop"  # one capture reads both
        table, problems = parse_table_config(config, f"tables/{name}.yml")
        assert problems == [] and table is not None
        tables.append(table)
    assert capture_group(tables[:1]).time_zone == "Europe/Berlin"
    with pytest.raises(HashcdcError, match="share changes.time_zone; these differ: "
                       r"orders \(Europe/Berlin\), items \(UTC\)"):  # fmt: skip
        capture_group(tables)


def test_a_captures_metrics_come_from_its_offsets(tmp_path: Any) -> None:
    from hashcdc.capture.landing import Offsets, TableProgress
    from hashcdc.capture.status import CaptureCollector
    from hashcdc.config import parse_table_config

    table, problems = parse_table_config(captured_config(5432, "orders", TABLE), f"{TABLE}.yml")
    assert table is not None, problems
    slot = table.source.database.capture_slot  # type: ignore[union-attr]
    offsets = Offsets(tmp_path / f"{slot}.json", slot, failure_count=7)
    offsets.failures = ["2026-12-06T10:00:00+00:00 lost the server"]
    offsets.tables[TABLE] = TableProgress(
        "public.orders", events=120, files=3, last_commit_time="2026-12-06T10:00:00+00:00"
    )
    offsets.save()
    metrics = CaptureCollector(lambda: [table], tmp_path).collect()
    samples = {(s.name, tuple(s.labels.values())): s.value for m in metrics for s in m.samples}
    assert samples == {
        ("hashcdc_capture_events_total", (TABLE,)): 120,
        ("hashcdc_capture_files_total", (TABLE,)): 3,
        ("hashcdc_capture_last_commit_timestamp_seconds", (TABLE,)): dt.datetime(
            2026, 12, 6, 10, tzinfo=dt.UTC
        ).timestamp(),
        ("hashcdc_capture_failures_total", (slot,)): 7,
    }
