"""Canonical encoding and hashing of typed rows (hash algorithm version 1).

Every hash is computed on the JVM with native Spark functions. The input of a hash is an
unambiguous encoding of the *non-null* ``(name, value)`` pairs of the hashed columns,
sorted by column name::

    <len(name)>:<name><len(value)>:<value>  ... repeated, concatenated

* A null value contributes nothing, so adding a nullable column does not change the hash
  of rows where it is null; ``""`` encodes as ``0:``, so null and the empty string differ.
* Length prefixes make the concatenation unambiguous: ``("ab", "c")`` never equals
  ``("a", "bc")``, whatever characters the values contain.
* Sorting by name makes the hash independent of column order.
* Values are encoded *after* casting, in a canonical text form, so that type widening and
  formatting do not change hashes: exact numbers (integers and decimals) as a plain decimal
  without trailing zeros (``1.50`` and ``1.5`` and a decimal(12,4) ``1.5000`` all give
  ``1.5``); ``-0.0`` as ``0.0``; timestamps as microseconds since the epoch in UTC;
  dates as ``yyyy-MM-dd``; booleans as ``true``/``false``.

The hash is MD5 (128 bits), stored as 16 raw bytes (``binary``; ``hex(keyhash)`` shows
the usual 32 hex characters). Golden vectors in
``tests/python/test_hashing.py`` pin this algorithm: a change in Spark or in this module
that alters any hash fails that test instead of turning every row into an update.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import ColumnConfig

HASH_ALGORITHM_VERSION = 1


def canonical_text(column: Column, column_type: str) -> Column:
    """Canonical text of an already-cast value; null stays null.

    Parameters
    ----------
    column : Column
        The value, already cast to ``column_type``.
    column_type : str
        The normalized Spark type name from the table config.

    Returns
    -------
    Column
        A string column.

    """
    if column_type.startswith("decimal"):
        return _canonical_decimal(column, column_type)
    if column_type in ("float", "double"):
        as_double = column.cast("double")
        # -0.0 = 0.0 in Spark comparisons, so this maps both zeros to 0.0.
        return F.when(as_double == 0, F.lit("0.0")).otherwise(as_double.cast("string"))
    if column_type == "timestamp":
        return F.unix_micros(column).cast("string")
    if column_type == "boolean":
        return F.when(column, F.lit("true")).when(~column, F.lit("false"))
    if column_type == "date":
        return F.date_format(column, "yyyy-MM-dd")
    return column.cast("string")


def _canonical_decimal(column: Column, column_type: str) -> Column:
    """Plain decimal text without trailing fractional zeros, whatever Spark's settings.

    Spark renders a decimal cast to string in scientific notation (``1.0E-7``) or plain
    (``0.00000010``) depending on ``spark.sql.ansi.enabled``; the unscaled integer is
    always plain, so the point is placed by hand.
    """
    scale = int(column_type[len("decimal(") : -1].split(",")[1])
    if scale == 0:
        return column.cast("decimal(38,0)").cast("string")
    unscaled = (column * F.lit(10**scale).cast(f"decimal({scale + 1},0)")).cast("decimal(38,0)")
    digits = F.regexp_replace(unscaled.cast("string"), "^-", "")
    sign = F.when(unscaled < 0, F.lit("-")).otherwise(F.lit(""))
    padded = F.concat(F.lit("0" * scale), digits)
    pointed = F.regexp_replace(padded, rf"^0*([0-9]+)([0-9]{{{scale}}})$", "$1.$2")
    stripped = F.regexp_replace(F.regexp_replace(pointed, r"0+$", ""), r"\.$", "")
    return F.concat(sign, stripped)


def _encoded_pair(name: str, value_text: Column) -> Column:
    name_part = f"{len(name)}:{name}"
    return F.concat(
        F.lit(name_part),
        F.length(value_text).cast("string"),
        F.lit(":"),
        value_text,
    )


def _encoding(named_texts: Iterable[tuple[str, Column]]) -> Column:
    """The encoding of (name, canonical text) pairs, sorted by name; null texts skipped."""
    pairs = [_encoded_pair(name, text) for name, text in sorted(named_texts, key=lambda p: p[0])]
    if not pairs:
        return F.lit("")
    # concat_ws skips nulls: a null value contributes no pair at all.
    return F.concat_ws("", *pairs)


def hash_input(columns: Iterable[tuple[ColumnConfig, Column]]) -> Column:
    """The canonical encoding of the non-null name/value pairs, sorted by name."""
    return _encoding((config.name, canonical_text(value, config.type)) for config, value in columns)


def with_row_hashes(
    frame: DataFrame,
    key_columns: list[ColumnConfig],
    compared_columns: list[ColumnConfig],
) -> DataFrame:
    """Add ``keyhash`` and ``nonkeyhash`` to a frame of typed columns.

    The canonical texts are projected first, in their own step, so that each value is
    rendered once although its encoding uses it twice (length and text); Spark does not
    merge the two projections because that would duplicate the expensive expressions.
    """
    hashed = {c.name: c for c in [*key_columns, *compared_columns]}
    texts = frame.select(
        "*",
        *[
            canonical_text(F.col(name), c.type).alias(_text_column(name))
            for name, c in hashed.items()
        ],
    )

    def digest(configs: list[ColumnConfig]) -> Column:
        encoding = _encoding((c.name, F.col(_text_column(c.name))) for c in configs)
        # 16 raw bytes: half the size of hex in files, shuffles and joins (docs/benchmarks.md).
        return F.unhex(F.md5(encoding))

    return texts.select(
        *frame.columns,
        digest(key_columns).alias("keyhash"),
        digest(compared_columns).alias("nonkeyhash"),
    )


def _text_column(name: str) -> str:
    return f"__canonical_{name}"
