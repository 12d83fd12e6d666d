"""Casting extract text to the configured column types, and saying why a value fails.

Every extract is read as text; each configured column is cast with ``try_cast`` (or a
configured date/timestamp pattern, or a number since the epoch), so a bad value never raises
mid-job: it becomes null, and the row is flagged with a message naming the column, its type
and the value. Shared by the row stage (:mod:`hashcdc.pipeline.stage`) and the change-event stage
(:mod:`hashcdc.pipeline.feed`).

Change events may carry values in a connector's own encoding: Debezium's ``precise``
decimals (the unscaled two's-complement integer as base64 bytes, the scale in the schema),
its variable-scale decimals (``{"scale": 3, "value": "AhzY"}``) and its time types (numbers
since the epoch). When an event carries its schema, the field's logical type says which
(:func:`typed_value` with ``logical``); without one, the column's ``encoding`` or
``format`` in the config does.
"""

from __future__ import annotations

import base64
import functools
import operator

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.column_types import Family, decimal_scale, family
from hashcdc.config import ColumnConfig, TableConfig

# What the rejects show instead of a sensitive column's value.
SENSITIVE_MASK = "(sensitive value)"
# ... and instead of a malformed line of a table with sensitive columns.
SENSITIVE_LINE_MASK = "(line withheld: the table has sensitive columns)"
# What a text decoder puts where bytes do not decode.
REPLACEMENT_CHARACTER = "\ufffd"
_EPOCH_UNITS = {"epoch_seconds": 1, "epoch_millis": 1_000, "epoch_micros": 1_000_000}
KAFKA_DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
# Logical types of Debezium / Kafka Connect schemas -> how the JSON value encodes them.
_EPOCH_LOGICAL_TYPES = {
    "io.debezium.time.Date": "epoch_days",
    "org.apache.kafka.connect.data.Date": "epoch_days",
    "io.debezium.time.Timestamp": "epoch_millis",
    "org.apache.kafka.connect.data.Timestamp": "epoch_millis",
    "io.debezium.time.MicroTimestamp": "epoch_micros",
    "io.debezium.time.NanoTimestamp": "epoch_nanos",
}
# ISO-8601 text with its offset: a plain cast reads it (and converts to UTC).
_TEXT_TIME_LOGICAL_TYPES = ("io.debezium.time.ZonedTimestamp", "io.debezium.time.IsoTimestamp")


def typed_value(
    raw: Column,
    column: ColumnConfig,
    logical: Column | None = None,
    logical_scale: Column | None = None,
) -> Column:
    """Cast a text value to the configured type; null where it does not cast.

    ``try_cast`` trims surrounding white space itself and never raises, whatever
    ``spark.sql.ansi.enabled`` says.

    Parameters
    ----------
    raw : Column
        The value as text.
    column : ColumnConfig
        The configured column (type, ``format``, ``encoding``).
    logical : Column, optional
        The logical type the event's schema gives the field (null without a schema); a
        known one decodes the value whatever the config says.
    logical_scale : Column, optional
        The ``scale`` parameter of a ``Decimal`` logical type.

    """
    configured = _configured_value(raw, column)
    if logical is None:
        return configured
    decoded = F.when(logical.isNull(), configured)
    kind = family(column.type)
    if kind in (Family.DATE, Family.TIMESTAMP):
        for name, unit in _EPOCH_LOGICAL_TYPES.items():
            decoded = decoded.when(logical == name, _epoch_value(raw, unit).cast(column.type))
        decoded = decoded.when(
            logical.isin(*_TEXT_TIME_LOGICAL_TYPES), raw.try_cast("timestamp").cast(column.type)
        )
    elif kind is Family.DECIMAL:
        decoded = decoded.when(
            logical == KAFKA_DECIMAL,
            debezium_decimal_text(raw, logical_scale).try_cast(column.type),
        ).when(logical == VARIABLE_SCALE_DECIMAL, _variable_scale_decimal(raw, column))
    elif kind is Family.TEXT:
        # A decimal landing in a text column holds the number's text, not its encoding.
        decoded = decoded.when(
            logical == KAFKA_DECIMAL, plain_number_text(debezium_decimal_text(raw, logical_scale))
        ).when(
            logical == VARIABLE_SCALE_DECIMAL, plain_number_text(variable_scale_decimal_text(raw))
        )
    return decoded.otherwise(configured)


def plain_number_text(text: Column) -> Column:
    """A decoded decimal's text without its padding zeros or a bare trailing point."""
    unpadded = F.regexp_replace(text, r"^(-?)0+([0-9])", "$1$2")
    return F.regexp_replace(unpadded, r"\.$", "")


def _epoch_value(raw: Column, unit: str) -> Column:
    """A date or timestamp from a whole number since the epoch (``epoch_*`` formats)."""
    if unit == "epoch_days":
        return F.date_from_unix_date(raw.try_cast("int"))
    count = raw.try_cast("bigint")
    if unit == "epoch_seconds":
        return F.timestamp_seconds(count)
    if unit == "epoch_millis":
        return F.timestamp_millis(count)
    if unit == "epoch_nanos":
        return F.timestamp_micros(F.floor(count / 1000).cast("bigint"))
    return F.timestamp_micros(count)


def debezium_decimal_text(encoded: Column, scale: Column | None) -> Column:
    """Decimal text of a Kafka Connect ``Decimal``: base64 two's-complement bytes.

    The bytes' hex digits (complemented for a negative number) are summed in
    ``decimal(38,0)`` with ``try_`` arithmetic, so a value too large for 38 digits is null
    (a cast failure), not an error. Every intermediate value is used once: the expression
    stays linear in size.
    """
    digits = F.upper(F.hex(F.try_to_binary(encoded, F.lit("base64"))))
    negative = F.substring(digits, 1, 1).isin("8", "9", "A", "B", "C", "D", "E", "F")
    # A negative number's magnitude is its complement plus one.
    magnitude_digits = F.when(
        negative, F.translate(digits, "0123456789ABCDEF", "FEDCBA9876543210")
    ).otherwise(digits)
    magnitude = F.aggregate(
        F.split(magnitude_digits, ""),
        F.lit(0).cast("decimal(38,0)"),
        lambda total, digit: F.try_add(
            F.try_multiply(total, F.lit(16).cast("decimal(38,0)")),
            F.conv(digit, 16, 10).cast("decimal(38,0)"),
        ),
    )
    unscaled = F.try_add(magnitude, F.when(negative, 1).otherwise(0).cast("decimal(38,0)"))
    # 39 digits hold any decimal(38,0); the point goes before the last `scale` digits.
    padded = F.lpad(unscaled.cast("string"), 39, "0")
    places = F.coalesce(scale, F.lit(0)).cast("int")
    pointed = F.regexp_replace(padded, F.concat(F.lit("([0-9]{"), places, F.lit("})$")), ".$1")
    sign = F.when(negative, F.lit("-")).otherwise(F.lit(""))
    return F.when(F.length(digits) > 0, F.concat(sign, pointed))


def variable_scale_decimal_text(raw: Column) -> Column:
    """Plain decimal text of Debezium's ``VariableScaleDecimal`` JSON ``{scale, value}``."""
    return debezium_decimal_text(
        F.try_variant_get(F.try_parse_json(raw), "$.value", "string"), _variable_scale(raw)
    )


def _variable_scale(raw: Column) -> Column:
    return F.try_variant_get(F.try_parse_json(raw), "$.scale", "int")


def _is_variable_scale_shape(raw: Column) -> Column:
    """Whether a value looks like a ``VariableScaleDecimal`` (a JSON object; cheap test)."""
    return F.ltrim(raw).startswith("{")


def _variable_scale_decimal(raw: Column, column: ColumnConfig) -> Column:
    """A ``VariableScaleDecimal`` as the declared decimal; null when its scale is larger.

    A larger scale would be rounded by the cast: that is a reject
    (:func:`column_message` names both scales), never a silent change of the value.
    """
    fits = _variable_scale(raw) <= F.lit(decimal_scale(column.type))
    return F.when(fits, variable_scale_decimal_text(raw).try_cast(column.type))


def _configured_value(raw: Column, column: ColumnConfig) -> Column:
    """The value cast as the config says (type, ``format``, ``encoding``)."""
    if column.encoding == "debezium_decimal":
        scale = column.source_scale
        if scale is None:
            scale = decimal_scale(column.type)
        return debezium_decimal_text(raw, F.lit(scale)).try_cast(column.type)
    if column.encoding == "debezium_variable_decimal":
        return _variable_scale_decimal(raw, column)
    kind = family(column.type)
    if kind is Family.DECIMAL:
        # Debezium's VariableScaleDecimal when the events carry no schema: its shape says it.
        return F.when(
            _is_variable_scale_shape(raw), _variable_scale_decimal(raw, column)
        ).otherwise(raw.try_cast(column.type))
    if kind is Family.TEXT:
        return raw
    if kind is Family.DATE and column.format == "epoch_days":
        return _epoch_value(raw, "epoch_days")
    if kind is Family.TIMESTAMP and column.format in _EPOCH_UNITS:
        return _epoch_value(raw, column.format)
    if kind is Family.TIMESTAMP and column.format:
        return F.try_to_timestamp(F.trim(raw), F.lit(column.format))
    if kind is Family.DATE and column.format:
        return F.to_date(F.try_to_timestamp(F.trim(raw), F.lit(column.format)))
    return raw.try_cast(column.type)


def is_present(raw: Column, column: ColumnConfig) -> Column:
    """Whether the raw text holds a value ("" is a value for strings only)."""
    if family(column.type) is Family.TEXT:
        return raw.isNotNull()
    return raw.isNotNull() & (F.trim(raw) != "")


def holds_undecodable_bytes(raw: Column) -> Column:
    """Whether text holds U+FFFD, which a reader puts where bytes were not valid text.

    Spark's CSV reader decodes each line in the extract's encoding and puts the
    replacement character where bytes do not decode: such a value is not the source's.
    """
    return F.instr(raw, REPLACEMENT_CHARACTER) > 0


def column_failed(raw: Column, typed: Column, column: ColumnConfig) -> Column:
    """True when the value does not cast, or is missing where it is required."""
    # typed first: the left operand of `&` is always evaluated, so Spark computes the cast
    # once for the flag and the output column (common subexpression elimination).
    failed = typed.isNull() & raw.isNotNull()
    if family(column.type) is not Family.TEXT:
        failed = failed & (F.trim(raw) != "")
    else:
        failed = failed | F.coalesce(holds_undecodable_bytes(raw), F.lit(False))
    if not column.nullable:
        failed = failed | ~is_present(raw, column)
    return failed


def column_message(raw: Column, typed: Column, column: ColumnConfig) -> Column:
    """Why a value cannot be loaded; null when it can."""
    described = f"column '{column.name}' ({column.type}"
    if column.format:
        described += f", format '{column.format}'"
    if column.encoding:
        described += f", encoding '{column.encoding}'"
    described += ")"
    present = is_present(raw, column)
    failed = present & typed.isNull()
    reasons = []
    kind = family(column.type)
    if kind is Family.DECIMAL and column.encoding != "debezium_decimal":
        declared, scale = decimal_scale(column.type), _variable_scale(raw)
        too_fine = failed & _is_variable_scale_shape(raw) & (scale > declared)
        reasons.append(
            (
                too_fine,
                F.concat(
                    F.lit(f"{described}: value '"),
                    raw,
                    F.lit("' has scale "),
                    scale.cast("string"),
                    F.lit(f", more than the {declared} of {column.type}"),
                ),
            )
        )
    if kind is Family.TEXT:
        reasons.append(
            (
                holds_undecodable_bytes(raw),
                F.concat(
                    F.lit(f"{described}: value '"),
                    raw,
                    F.lit(
                        "' holds bytes that are not valid text in the extract's encoding "
                        f"(shown as {REPLACEMENT_CHARACTER}): fix the source's encoding, or "
                        "set source.csv.encoding"
                    ),
                ),
            )
        )
    reasons.append(
        (failed, F.concat(F.lit(f"{described}: value '"), raw, F.lit("' does not cast")))
    )
    if not column.nullable:
        what = "key column" if column.key else "non-nullable column"
        reasons.append((~present, F.lit(f"{what} '{column.name}' is empty")))
    message = F.when(*reasons[0])
    for condition, text in reasons[1:]:
        message = message.when(condition, text)
    return message


def present_messages(messages: list[Column]) -> Column:
    """The messages that are not null, as an array; null when every one is.

    A cheap test of each message guards the array: dropping its nulls is a higher-order
    function, which Spark evaluates outside generated code (with all it reads), so that
    runs only for the rows that have a message.
    """
    any_present = functools.reduce(operator.or_, [message.isNotNull() for message in messages])
    return F.when(any_present, F.array_compact(F.array(*messages)))


TYPED_PREFIX = "__typed_"


def typed_projection(typed: dict[str, Column]) -> tuple[list[Column], dict[str, Column]]:
    """Typed values projected once, under temporary names, beside the raw columns (``*``).

    Returns the projection and each typed value as a reference to its projected column,
    so the messages and hashes that use a value share one computation (a decoded decimal
    is costly to plan and to run), and a raw column's name is never resolved to its typed
    column of the same select (Spark's lateral column aliases, inside lambdas). Frame-free.
    """
    projected = [value.alias(TYPED_PREFIX + name) for name, value in typed.items()]
    return projected, {name: F.col(TYPED_PREFIX + name) for name in typed}


def values_map(table: TableConfig) -> Column:
    """Column name -> the value as text, of the frame it is selected from (raw or typed).

    A sensitive column's value is masked: the rejects are not a place for it.
    """
    names = F.array(*[F.lit(c.name) for c in table.columns])
    values = F.array(
        *[
            F.when(F.col(c.name).isNotNull(), F.lit(SENSITIVE_MASK))
            if c.sensitive
            else F.col(c.name).cast("string")
            for c in table.columns
        ]
    )
    return F.map_from_arrays(names, values)


def unavailable_forms(placeholder: str) -> list[str]:
    """The texts a connector's unavailable-value placeholder takes in JSON.

    Text columns carry it as is, binary columns as its bytes in base64 or hex (per the
    connector's ``binary.handling.mode``), array columns as a one-element array.
    """
    data = placeholder.encode("utf-8")
    return [
        placeholder,
        base64.b64encode(data).decode("ascii"),
        data.hex(),
        data.hex().upper(),
        f'["{placeholder}"]',
    ]


def is_unavailable(raw: Column, placeholder: str) -> Column:
    """Whether a raw value is the connector's placeholder for a value it could not read."""
    *plain, array = unavailable_forms(placeholder)
    # Only arrays need their white space removed; the cheap test guards the regex.
    as_array = raw.startswith("[") & (F.regexp_replace(raw, r"\s+", "") == F.lit(array))
    return F.coalesce(raw.isin(*plain) | as_array, F.lit(False))
