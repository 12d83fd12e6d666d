"""Casting extract text to the configured column types, and saying why a value fails.

Every extract is read as text; each configured column is cast with ``try_cast`` (or a
configured date/timestamp pattern, or a number since the epoch), so a bad value never raises
mid-job: it becomes null, and the row is flagged with a message naming the column, its type
and the value. Shared by the row stage (:mod:`hashcdc.stage`) and the change-event stage
(:mod:`hashcdc.feed`).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import ColumnConfig, TableConfig

_EPOCH_UNITS = {"epoch_seconds": 1, "epoch_millis": 1_000, "epoch_micros": 1_000_000}


def typed_value(raw: Column, column: ColumnConfig) -> Column:
    """Cast a text value to the configured type; null where it does not cast.

    ``try_cast`` trims surrounding white space itself and never raises, whatever
    ``spark.sql.ansi.enabled`` says.
    """
    if column.type == "string":
        return raw
    if column.type == "date" and column.format == "epoch_days":
        return F.date_from_unix_date(raw.try_cast("int"))
    if column.type == "timestamp" and column.format in _EPOCH_UNITS:
        count = raw.try_cast("bigint")
        if column.format == "epoch_seconds":
            return F.timestamp_seconds(count)
        if column.format == "epoch_millis":
            return F.timestamp_millis(count)
        return F.timestamp_micros(count)
    if column.type == "timestamp" and column.format:
        return F.try_to_timestamp(F.trim(raw), F.lit(column.format))
    if column.type == "date" and column.format:
        return F.to_date(F.try_to_timestamp(F.trim(raw), F.lit(column.format)))
    return raw.try_cast(column.type)


def is_present(raw: Column, column: ColumnConfig) -> Column:
    """Whether the raw text holds a value ("" is a value for strings only)."""
    if column.type == "string":
        return raw.isNotNull()
    return raw.isNotNull() & (F.trim(raw) != "")


def column_failed(raw: Column, typed: Column, column: ColumnConfig) -> Column:
    """True when the value does not cast, or is missing where it is required."""
    # typed first: the left operand of `&` is always evaluated, so Spark computes the cast
    # once for the flag and the output column (common subexpression elimination).
    failed = typed.isNull() & raw.isNotNull()
    if column.type != "string":
        failed = failed & (F.trim(raw) != "")
    if not column.nullable:
        failed = failed | ~is_present(raw, column)
    return failed


def column_message(raw: Column, typed: Column, column: ColumnConfig) -> Column:
    """Why a value cannot be loaded; null when it can."""
    described = f"column '{column.name}' ({column.type}"
    described += f", format '{column.format}')" if column.format else ")"
    present = is_present(raw, column)
    message = F.when(
        present & typed.isNull(),
        F.concat(F.lit(f"{described}: value '"), raw, F.lit("' does not cast")),
    )
    if not column.nullable:
        what = "key column" if column.key else "non-nullable column"
        message = message.when(~present, F.lit(f"{what} '{column.name}' is empty"))
    return message


def values_map(table: TableConfig) -> Column:
    """Column name -> the value as text, of the frame it is selected from (raw or typed)."""
    names = F.array(*[F.lit(c.name) for c in table.columns])
    values = F.array(*[F.col(c.name).cast("string") for c in table.columns])
    return F.map_from_arrays(names, values)
