"""Hashing rules of DESIGN.md, checked on the JVM functions the stage uses.

The golden vectors pin hash algorithm version 2: if a Spark upgrade or a change in
``hashcdc.pipeline.hashing`` alters any of them, every stored row would turn into an update, so
this test must fail first. Each vector lists its units (the canonical name/value
sequence), which the test also hashes with an independent XXH64 implementation (the
``xxhash`` package), so the vectors document the encoding itself.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)
from reference_hash import FROZEN_HASH, FROZEN_UNITS, pair, reference_hash

from hashcdc.config import ColumnConfig
from hashcdc.pipeline.hashing import with_hashes

SPARK_TYPES = {
    "string": StringType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "float": FloatType(),
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
    return bytes(with_hashes(frame, {"nonkeyhash": configs}).first()["nonkeyhash"]).hex()


def spark_hash(spark: Any, columns: list[tuple[str, str]], values: list[Any]) -> str:
    """The hash of one row computed by Spark, as the stage does it."""
    schema = StructType([StructField(n, spark_type(t), True) for n, t in columns])
    frame = spark.createDataFrame([tuple(values)], schema)
    return hashed_hex(frame, [ColumnConfig(name=n, type=t) for n, t in columns])


B_C, B_BC = pair("b", "str", "c"), pair("b", "str", "bc")
GOLDEN = [
    # (columns, values, units): the reference hash of the units is the row's hash.
    ([("id", "bigint")], [1], pair("id", "str", "1")),
    ([("name", "string")], [""], pair("name", "str", "")),
    ([("name", "string")], [None], []),
    (
        [("a", "string"), ("b", "string")],
        ["ab", "c"],
        pair("a", "str", "ab") + pair("b", "str", "c"),
    ),
    (
        [("a", "string"), ("b", "string")],
        ["a", "bc"],
        pair("a", "str", "a") + pair("b", "str", "bc"),
    ),
    ([("b", "string"), ("a", "string")], ["a", None], pair("b", "str", "a")),
    ([("amount", "decimal(10,2)")], [Decimal("1.50")], pair("amount", "str", "1.5")),
    ([("amount", "decimal(10,2)")], [Decimal("2.00")], pair("amount", "str", "2")),
    ([("amount", "decimal(12,8)")], [Decimal("0.00000010")], pair("amount", "str", "0.0000001")),
    ([("amount", "decimal(12,8)")], [Decimal("-0.00001000")], pair("amount", "str", "-0.00001")),
    ([("amount", "decimal(10,2)")], [Decimal("-12.30")], pair("amount", "str", "-12.3")),
    ([("amount", "decimal(10,2)")], [Decimal("0.00")], pair("amount", "str", "0")),
    ([("amount", "decimal(10,2)")], [Decimal("100.00")], pair("amount", "str", "100")),
    (
        [("amount", "decimal(38,0)")],
        [Decimal("12345678901234567890123456789012345678")],
        pair("amount", "str", "12345678901234567890123456789012345678"),
    ),
    ([("x", "double")], [-0.0], pair("x", "double", 0.0)),
    ([("x", "double")], [1.5], pair("x", "double", 1.5)),
    ([("x", "double")], [float("nan")], pair("x", "double", float("nan"))),
    ([("x", "float")], [0.5], pair("x", "double", 0.5)),
    ([("flag", "boolean")], [True], pair("flag", "bool", True)),
    ([("born", "date")], [dt.date(2000, 2, 29)], pair("born", "int", 11016)),
    ([("at", "timestamp")], [dt.datetime(1970, 1, 1, 0, 0, 1)], pair("at", "long", 1_000_000)),
    ([("név", "string")], ["Zoë"], pair("név", "str", "Zoë")),
]

# A whole-row hash frozen when hash algorithm version 2 was released.
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


@pytest.mark.parametrize(("columns", "values", "units"), GOLDEN)
def test_golden_vectors(spark: Any, columns: list, values: list, units: list) -> None:
    assert spark_hash(spark, columns, values) == reference_hash(units)


def test_frozen_row_hash(spark: Any) -> None:
    assert spark_hash(spark, *FROZEN_ROW) == FROZEN_HASH
    assert reference_hash(FROZEN_UNITS) == FROZEN_HASH


def test_null_differs_from_empty_string(spark: Any) -> None:
    assert spark_hash(spark, [("s", "string")], [None]) != spark_hash(
        spark, [("s", "string")], [""]
    )


def test_no_separator_collisions(spark: Any) -> None:
    columns = [("a", "string"), ("b", "string")]
    assert spark_hash(spark, columns, ["ab", "c"]) != spark_hash(spark, columns, ["a", "bc"])
    assert spark_hash(spark, columns, ["1:b1:", None]) != spark_hash(spark, columns, ["", ""])
    # A value that equals a column name cannot shift the name/value pairing.
    assert spark_hash(spark, columns, [None, "b"]) != spark_hash(spark, columns, ["b", None])


def test_column_order_does_not_matter(spark: Any) -> None:
    forward = spark_hash(spark, [("a", "int"), ("b", "string")], [1, "x"])
    backward = spark_hash(spark, [("b", "string"), ("a", "int")], ["x", 1])
    assert forward == backward


def test_adding_a_null_column_keeps_the_hash(spark: Any) -> None:
    before = spark_hash(spark, [("a", "int")], [1])
    after = spark_hash(spark, [("a", "int"), ("added", "string")], [1, None])
    assert before == after


@pytest.mark.parametrize(
    ("narrow", "wide"),
    [
        (("int", 7), ("bigint", 7)),
        (("decimal(10,2)", Decimal("1.50")), ("decimal(12,4)", Decimal("1.5000"))),
        (("int", 3), ("decimal(10,2)", Decimal("3.00"))),
        (("float", 0.25), ("double", 0.25)),
    ],
)
def test_type_widening_keeps_the_hash(spark: Any, narrow: tuple, wide: tuple) -> None:
    assert spark_hash(spark, [("v", narrow[0])], [narrow[1]]) == spark_hash(
        spark, [("v", wide[0])], [wide[1]]
    )


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_decimal_text_does_not_depend_on_ansi_mode(spark: Any, ansi: str) -> None:
    previous = spark.conf.get("spark.sql.ansi.enabled")
    try:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
        actual = spark_hash(spark, [("d", "decimal(12,8)")], [Decimal("0.00000010")])
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)
    assert actual == reference_hash(pair("d", "str", "0.0000001"))


def test_timestamps_hash_in_utc_whatever_the_session_zone(spark: Any) -> None:
    value = dt.datetime(2024, 1, 1, 12, 0, 0)
    utc = spark_hash(spark, [("at", "timestamp")], [value])
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
        frame = spark.sql("select timestamp'2024-01-01 07:00:00' as at")
        other = hashed_hex(frame, [ColumnConfig(name="at", type="timestamp")])
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert other == utc
