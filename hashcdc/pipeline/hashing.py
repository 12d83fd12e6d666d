"""Canonical encoding and hashing of typed rows (hash algorithm version 2).

Every hash is computed on the JVM with native Spark functions. A hash covers the
*non-null* ``(name, value)`` pairs of the hashed columns, sorted by column name, as a
sequence of *units*::

    lane, name_1, value_1, name_2, value_2, ...

and is the 128-bit pair of two XXH64 chains (Spark's ``xxhash64``: each unit is hashed
with the previous unit's hash as its seed), one chain starting with the unit ``1`` and the
other with ``2``. ``keyhash`` and ``nonkeyhash`` are stored as 16 raw bytes (``binary``):
the first chain's 64 bits, then the second's, big-endian.

* A null value contributes neither its name nor its value, so adding a nullable column
  does not change the hash of rows where it is null; ``""`` is a unit of zero bytes, so
  null and the empty string differ.
* Each unit is hashed as a whole, so there are no separator collisions: ``("ab", "c")``
  never equals ``("a", "bc")``, whatever characters the values contain; and units
  alternate strictly between a name and its value, so a value that looks like a column
  name cannot shift the pairing.
* Sorting by name makes the hash independent of column order. The name is the column's
  first one (``ColumnConfig.hash_name``): a declared rename keeps every hash.
* Values are hashed **after** casting, in a canonical form, so that type widening and
  formatting do not change hashes: exact numbers (integers and decimals) as the text of a
  plain decimal without trailing zeros (``1.50``, ``1.5`` and a decimal(12,4) ``1.5000``
  all give ``1.5``; an int ``3`` and a decimal ``3.00`` both give ``3``); ``float`` and
  ``double`` as the 64 bits of the double (``-0.0`` as ``0.0``; one NaN); timestamps as
  microseconds since the epoch in UTC; dates as days since the epoch; booleans as 1/0;
  strings as their UTF-8 bytes.

Version 1 (MD5 of a length-prefixed text encoding) rendered every double as text, which
cost as much as parsing the CSV; version 2 hashes typed values and is about 6x cheaper
(docs/performance.md). Golden vectors in ``tests/functional/test_hashing.py`` pin this
algorithm and recompute it with an independent XXH64 implementation: a change in Spark or
in this module that alters any hash fails that test instead of turning every row into an
update. ``HASH_ALGORITHM_VERSION`` is recorded on every state table; a run refuses a state
written with another version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.column_types import Family, decimal_scale, family
from hashcdc.config import ColumnConfig, TableConfig
from hashcdc.pipeline.columns import SENSITIVE_HASH
from hashcdc.pipeline.projections import built_once, selected

HASH_ALGORITHM_VERSION = 2
# The first unit of each of the two XXH64 chains that make up a 128-bit hash.
HASH_LANES = (1, 2)


def _canonical_float(column: Column, column_type: str) -> Column:
    as_double = column.cast("double")
    # -0.0 = 0.0 in Spark comparisons, so this maps both zeros to 0.0.
    return F.when(as_double == 0, F.lit(0.0)).otherwise(as_double)


def _as_it_is(column: Column, column_type: str) -> Column:
    return column


# Each family's canonical value unit (the rules in the module doc). Every family of the
# type registry has one: a type without a hash encoding cannot exist.
_CANONICAL: dict[Family, Callable[[Column, str], Column]] = {
    Family.TEXT: _as_it_is,
    Family.INTEGER: lambda column, column_type: column.cast("string"),
    Family.FLOATING: _canonical_float,
    Family.DECIMAL: lambda column, column_type: _canonical_decimal(column, column_type),
    Family.BOOLEAN: _as_it_is,
    Family.DATE: lambda column, column_type: F.unix_date(column),
    Family.TIMESTAMP: lambda column, column_type: F.unix_micros(column),
}
if set(_CANONICAL) != set(Family):
    raise ImportError(f"no hash encoding for {set(Family) - set(_CANONICAL)}")


def canonical_value(column: Column, column_type: str) -> Column:
    """The value unit of an already-cast value, in its canonical form; null stays null.

    Parameters
    ----------
    column : Column
        The value, already cast to ``column_type``.
    column_type : str
        The normalized Spark type name from the table config.

    Returns
    -------
    Column
        A string, double, int, bigint or boolean column, per the rules in the module doc.

    """
    return _CANONICAL[family(column_type)](column, column_type)


def _canonical_decimal(column: Column, column_type: str) -> Column:
    """Plain decimal text without trailing fractional zeros, whatever Spark's settings.

    Spark renders a decimal cast to string in scientific notation (``1.0E-7``) or plain
    (``0.00000010``) depending on ``spark.sql.ansi.enabled``; the unscaled integer is
    always plain, so the point is placed by hand.
    """
    scale = decimal_scale(column_type)
    if scale == 0:
        return column.cast("decimal(38,0)").cast("string")
    unscaled = (column * F.lit(10**scale).cast(f"decimal({scale + 1},0)")).cast("decimal(38,0)")
    digits = F.regexp_replace(unscaled.cast("string"), "^-", "")
    sign = F.when(unscaled < 0, F.lit("-")).otherwise(F.lit(""))
    padded = F.concat(F.lit("0" * scale), digits)
    pointed = F.regexp_replace(padded, rf"^0*([0-9]+)([0-9]{{{scale}}})$", "$1.$2")
    stripped = F.regexp_replace(F.regexp_replace(pointed, r"0+$", ""), r"\.$", "")
    return F.concat(sign, stripped)


def hash_units(named_values: Iterable[tuple[str, Column]]) -> list[Column]:
    """The name and value units of (name, canonical value) pairs, sorted by name.

    A null value also nulls its name, and ``xxhash64`` skips null arguments: the pair
    contributes nothing.
    """
    units: list[Column] = []
    for name, value in sorted(named_values, key=lambda pair: pair[0]):
        units += [F.when(value.isNotNull(), F.lit(name)), value]
    return units


def _lane_hex(lane: int, units: list[Column]) -> Column:
    """One 64-bit XXH64 chain as 16 hex digits (two's complement, big-endian)."""
    return F.lpad(F.hex(F.xxhash64(F.lit(lane), *units)), 16, "0")


def digest(units: list[Column]) -> Column:
    """The 128-bit hash of a unit sequence as 16 raw bytes."""
    return F.unhex(F.concat(*[_lane_hex(lane, units) for lane in HASH_LANES]))


def typed_row_hash(values: dict[str, Column], columns: Iterable[ColumnConfig]) -> Column:
    """The 128-bit hash of typed values (name -> Column) of ``columns``, canonicalized here."""
    return digest(
        hash_units((c.hash_name, canonical_value(values[c.name], c.type)) for c in columns)
    )


def with_hashes(frame: DataFrame, hashes: dict[str, list[ColumnConfig]]) -> DataFrame:
    """Add one 128-bit hash column per entry of ``hashes`` (name -> the columns it covers).

    The canonical values are projected first, in their own step, so that each is computed
    once although every lane (and the null test of its name) uses it.
    """
    key = ("hashes", tuple((name, tuple(configs)) for name, configs in hashes.items()))
    canonical, digests = built_once(key, lambda: _hash_projections(hashes))
    kept = tuple(name for name in frame.columns if name not in hashes)
    with_canonical = selected(frame, (key, "canonical"), lambda: ["*", *canonical])
    return selected(with_canonical, (key, kept), lambda: [*kept, *digests])


def _hash_projections(hashes: dict[str, list[ColumnConfig]]) -> tuple[list[Column], list[Column]]:
    """:func:`with_hashes`' canonical values (beside ``*``), then its hash columns."""
    hashed = {c.name: c for configs in hashes.values() for c in configs}
    canonical = [
        canonical_value(F.col(name), c.type).alias(_canonical_column(name))
        for name, c in hashed.items()
    ]

    def row_digest(configs: list[ColumnConfig]) -> Column:
        return digest(hash_units((c.hash_name, F.col(_canonical_column(c.name))) for c in configs))

    return canonical, [row_digest(configs).alias(name) for name, configs in hashes.items()]


def row_hashes(table: TableConfig) -> dict[str, list[ColumnConfig]]:
    """The hashes of a table's rows -> the columns each covers.

    ``keyhash`` (the key), ``nonkeyhash`` (the compared columns) and, when the table has
    sensitive columns, ``sensitive_hash``: kept apart, so that no hash in the main tables
    covers a sensitive value (a hash of a short value is easily reversed by trying them all).
    """
    hashes = {"keyhash": list(table.key_columns), "nonkeyhash": list(table.compared_columns)}
    if table.sensitive_columns:
        hashes[SENSITIVE_HASH] = list(table.sensitive_columns)
    return hashes


def _canonical_column(name: str) -> str:
    return f"__canonical_{name}"
