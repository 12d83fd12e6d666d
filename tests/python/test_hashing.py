"""Hashing rules of DESIGN.md, checked on the JVM functions the stage uses.

The golden vectors pin hash algorithm version 1: if a Spark upgrade or a change in
``hashcdc.hashing`` alters any of them, every stored row would turn into an update, so
this test must fail first. Each vector carries its canonical encoding, which the test
also hashes with Python's hashlib, so the vectors document the encoding itself.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from hashcdc.config import ColumnConfig
from hashcdc.hashing import HASH_ALGORITHM_VERSION, hash_input, with_row_hashes

SPARK_TYPES = {
    "string": StringType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "double": DoubleType(),
    "boolean": BooleanType(),
    "date": DateType(),
    "timestamp": TimestampType(),
}


def spark_type(name: str) -> Any:
    if name.startswith("decimal"):
        precision, scale = name[8:-1].split(",")
        return DecimalType(int(precision), int(scale))
    return SPARK_TYPES[name]


def hashed_hex(frame: Any, configs: list[ColumnConfig]) -> str:
    """The nonkeyhash the stage computes for the frame's first row, as lower-case hex."""
    return bytes(with_row_hashes(frame, [], configs).first()["nonkeyhash"]).hex()


def hashes(spark: Any, columns: list[tuple[str, str]], values: list[Any]) -> tuple[str, str]:
    """(hash input, md5 hex) of one row computed by Spark, the hash as the stage does it."""
    schema = StructType([StructField(n, spark_type(t), True) for n, t in columns])
    frame = spark.createDataFrame([tuple(values)], schema)
    configs = [ColumnConfig(name=n, type=t) for n, t in columns]
    encoding = frame.select(hash_input([(c, F.col(c.name)) for c in configs])).first()[0]
    return encoding, hashed_hex(frame, configs)


GOLDEN = [
    # (columns, values, canonical encoding); the md5 of the encoding is the hash.
    ([("id", "bigint")], [1], "2:id1:1"),
    ([("name", "string")], [""], "4:name0:"),
    ([("name", "string")], [None], ""),
    ([("a", "string"), ("b", "string")], ["ab", "c"], "1:a2:ab1:b1:c"),
    ([("a", "string"), ("b", "string")], ["a", "bc"], "1:a1:a1:b2:bc"),
    ([("b", "string"), ("a", "string")], ["1:a", None], "1:b3:1:a"),
    ([("amount", "decimal(10,2)")], [Decimal("1.50")], "6:amount3:1.5"),
    ([("amount", "decimal(10,2)")], [Decimal("2.00")], "6:amount1:2"),
    ([("amount", "decimal(12,8)")], [Decimal("0.00000010")], "6:amount9:0.0000001"),
    ([("amount", "decimal(12,8)")], [Decimal("-0.00001000")], "6:amount8:-0.00001"),
    ([("amount", "decimal(10,2)")], [Decimal("-12.30")], "6:amount5:-12.3"),
    ([("amount", "decimal(10,2)")], [Decimal("0.00")], "6:amount1:0"),
    ([("amount", "decimal(10,2)")], [Decimal("100.00")], "6:amount3:100"),
    (
        [("amount", "decimal(38,0)")],
        [Decimal("12345678901234567890123456789012345678")],
        "6:amount38:12345678901234567890123456789012345678",
    ),
    ([("x", "double")], [-0.0], "1:x3:0.0"),
    ([("x", "double")], [1.5], "1:x3:1.5"),
    ([("flag", "boolean")], [True], "4:flag4:true"),
    ([("born", "date")], [dt.date(2000, 2, 29)], "4:born10:2000-02-29"),
    ([("at", "timestamp")], [dt.datetime(1970, 1, 1, 0, 0, 1)], "2:at7:1000000"),
    ([("név", "string")], ["Zoë"], "3:név3:Zoë"),
]

# Whole-row hashes frozen when hash algorithm version 1 was released.
FROZEN_ROW = (
    [
        ("region", "string"),
        ("id", "int"),
        ("amount", "decimal(10,2)"),
        ("score", "double"),
        ("active", "boolean"),
        ("born", "date"),
        ("note", "string"),
    ],
    ["eu", 42, Decimal("10.50"), 0.25, False, dt.date(1999, 12, 31), None],
)
FROZEN_ENCODING = (
    "6:active5:false6:amount4:10.54:born10:1999-12-312:id2:426:region2:eu5:score4:0.25"
)
FROZEN_MD5 = "6e8793bdc9355a06b0846df9dbeeabf4"


@pytest.mark.parametrize(("columns", "values", "encoding"), GOLDEN)
def test_golden_encoding(spark: Any, columns: list, values: list, encoding: str) -> None:
    actual_input, actual_hash = hashes(spark, columns, values)
    assert actual_input == encoding
    assert actual_hash == hashlib.md5(encoding.encode("utf-8")).hexdigest()


def test_frozen_row_hash(spark: Any) -> None:
    actual_input, actual_hash = hashes(spark, *FROZEN_ROW)
    assert actual_input == FROZEN_ENCODING
    assert actual_hash == FROZEN_MD5


def test_null_differs_from_empty_string(spark: Any) -> None:
    assert hashes(spark, [("s", "string")], [None])[1] != hashes(spark, [("s", "string")], [""])[1]


def test_no_separator_collisions(spark: Any) -> None:
    columns = [("a", "string"), ("b", "string")]
    assert hashes(spark, columns, ["ab", "c"])[1] != hashes(spark, columns, ["a", "bc"])[1]
    assert hashes(spark, columns, ["1:b1:", None])[1] != hashes(spark, columns, ["", ""])[1]


def test_column_order_does_not_matter(spark: Any) -> None:
    forward = hashes(spark, [("a", "int"), ("b", "string")], [1, "x"])[1]
    backward = hashes(spark, [("b", "string"), ("a", "int")], ["x", 1])[1]
    assert forward == backward


def test_adding_a_null_column_keeps_the_hash(spark: Any) -> None:
    before = hashes(spark, [("a", "int")], [1])[1]
    after = hashes(spark, [("a", "int"), ("added", "string")], [1, None])[1]
    assert before == after


@pytest.mark.parametrize(
    ("narrow", "wide"),
    [
        (("int", 7), ("bigint", 7)),
        (("decimal(10,2)", Decimal("1.50")), ("decimal(12,4)", Decimal("1.5000"))),
        (("int", 3), ("decimal(10,2)", Decimal("3.00"))),
    ],
)
def test_type_widening_keeps_the_hash(spark: Any, narrow: tuple, wide: tuple) -> None:
    assert hashes(spark, [("v", narrow[0])], [narrow[1]]) == hashes(
        spark, [("v", wide[0])], [wide[1]]
    )


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_decimal_text_does_not_depend_on_ansi_mode(spark: Any, ansi: str) -> None:
    previous = spark.conf.get("spark.sql.ansi.enabled")
    try:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
        encoding, _ = hashes(spark, [("d", "decimal(12,8)")], [Decimal("0.00000010")])
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)
    assert encoding == "1:d9:0.0000001"


def test_timestamps_hash_in_utc_whatever_the_session_zone(spark: Any) -> None:
    value = dt.datetime(2024, 1, 1, 12, 0, 0)
    utc = hashes(spark, [("at", "timestamp")], [value])
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
        frame = spark.sql("select timestamp'2024-01-01 07:00:00' as at")
        other = hashed_hex(frame, [ColumnConfig(name="at", type="timestamp")])
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert other == utc[1]


def test_algorithm_version_is_pinned() -> None:
    assert HASH_ALGORITHM_VERSION == 1
