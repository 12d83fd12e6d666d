"""The change-event stage: one row per event of a table's change feed for a business date.

Called through :func:`hashcdc.stage.typecast_and_hash` for ``extract_type: changes``. Events
arrive as

* ``debezium``: JSON lines, each a Debezium envelope (``before``, ``after``, ``op``,
  ``ts_ms``, ``source``), with or without the ``{"schema": ..., "payload": ...}`` wrapper;
* ``debezium_flat``: JSON lines of the new-record-state form (the row's fields at the top
  level, ``__op`` and/or ``__deleted``, source fields added as ``__<name>``);
* ``csv`` / ``parquet``: the row's columns plus ``changes.operation_column`` and the
  ``changes.sequence_by`` columns.

Each event becomes: the configured columns (the *image*: the after image, or for a delete
the before image, which may hold the key only), ``keyhash`` of the image's identity
(its key columns; every compared column for a table without a key), ``nonkeyhash`` of its
compared columns, ``before_keyhash`` (an update whose before image has another identity),
``event_op`` (``c``/``u``/``d``/``r``/``t``) and ``event_sequence`` (a struct of the
``sequence_by`` fields, typed, compared field by field). Events that cannot be applied get
``_row_errors`` like any rejected row. JSON is parsed once per line into a VARIANT; every
field is taken from it with native functions, nothing runs in Python per event.
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.casting import column_message, typed_value
from hashcdc.config import OPERATION_SPELLINGS, ColumnConfig, SequenceField, TableConfig
from hashcdc.errors import InputDataError
from hashcdc.hashing import canonical_value, digest, hash_units, with_row_hashes

LINE_COLUMN = "_line"
BEFORE_PREFIX = "__before_"
OPERATION_RAW_COLUMN = "_op_raw"
SEQUENCE_PREFIX = "_seq_"
# Which event operations carry which image.
IMAGE_OPERATIONS = ("c", "u", "r")


def read_event_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """The event files as lines of text, with where each line sits (file, split, id)."""
    return spark.read.text(files).select(
        F.col("value").alias(LINE_COLUMN),
        F.col("_metadata.file_path").alias("_source_file"),
        F.col("_metadata.file_block_start").alias("_block_start"),
        F.monotonically_increasing_id().alias("_row_id"),
    )


def _json_path(*parts: str) -> str:
    return "$" + "".join(f"['{part}']" for part in parts)


def _sequence_path(field: SequenceField) -> str:
    return _json_path(*field.field.split("."))


def raw_events(spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
    """A JSON feed's events with every needed field as text (still uncast).

    Blank lines and Kafka tombstones (``null``) are not events and are left out; a line that
    is not JSON keeps its text in ``_corrupt_record``.
    """
    assert table.changes is not None
    lines = read_event_lines(spark, files)
    line = F.col(LINE_COLUMN)
    parsed = F.try_parse_json(line)
    # The schema wrapper puts the envelope under "payload"; without it, it is the line.
    envelope = F.coalesce(F.try_variant_get(parsed, "$.payload", "variant"), parsed)

    def text(*path: str) -> Column:
        return F.try_variant_get(envelope, _json_path(*path), "string")

    identity = [c.name for c in table.key_columns]
    if table.source.format == "debezium":
        operation = text("op")
        image = {
            c.name: F.when(operation == "d", text("before", c.name)).otherwise(
                text("after", c.name)
            )
            for c in table.columns
        }
        before = {name: text("before", name) for name in identity}
    else:
        deleted = F.lower(text("__deleted")) == "true"
        # Without __op (not added by the connector) a row is an upsert: with a key, c and u
        # both upsert; without one, c adds the row (a u would need its before image).
        operation = F.when(deleted, F.lit("d")).otherwise(F.coalesce(text("__op"), F.lit("c")))
        image = {c.name: text(c.name) for c in table.columns}
        before = {name: F.lit(None).cast("string") for name in identity}
    sequence = {
        f.alias: F.try_variant_get(envelope, _sequence_path(f), "string")
        for f in table.changes.sequence_by
    }
    blank = F.trim(line).isin("", "null")
    return lines.where(~blank).select(
        *[value.alias(name) for name, value in image.items()],
        *[value.alias(BEFORE_PREFIX + name) for name, value in before.items()],
        operation.alias(OPERATION_RAW_COLUMN),
        *[value.alias(SEQUENCE_PREFIX + alias) for alias, value in sequence.items()],
        F.when(parsed.isNull(), line).alias("_corrupt_record"),
        line,
        "_source_file",
        "_block_start",
        "_row_id",
    )


def raw_table_events(frame: DataFrame, table: TableConfig) -> DataFrame:
    """A csv/parquet feed's events (already read as text) in the shape of :func:`raw_events`."""
    assert table.changes is not None and table.changes.operation_column is not None
    return frame.select(
        *[F.col(c.name) for c in table.columns],
        *[F.lit(None).cast("string").alias(BEFORE_PREFIX + c.name) for c in table.key_columns],
        F.col(table.changes.operation_column).alias(OPERATION_RAW_COLUMN),
        *[F.col(f.field).alias(SEQUENCE_PREFIX + f.alias) for f in table.changes.sequence_by],
        "_corrupt_record",
        F.col("_corrupt_record").alias(LINE_COLUMN),
        "_source_file",
        "_block_start",
        "_row_id",
    )


def _normalized_operation(raw: Column) -> Column:
    """The event's operation as Debezium's letter, null when it is not one we know."""
    spellings = F.create_map(
        *[item for pair in OPERATION_SPELLINGS.items() for item in map(F.lit, pair)]
    )
    return F.element_at(spellings, F.lower(F.trim(raw)))


def _identity_hash(values: dict[str, Column], columns: tuple[ColumnConfig, ...]) -> Column:
    return digest(hash_units((c.name, canonical_value(values[c.name], c.type)) for c in columns))


def _event_problems(
    table: TableConfig, operation: Column, typed: dict[str, Column], typed_before: dict[str, Column]
) -> list[Column]:
    """Why an event cannot be applied, one message column per possible reason."""
    assert table.changes is not None
    has_image = operation.isin(*IMAGE_OPERATIONS)
    problems = [
        F.when(
            operation.isNull(),
            F.concat(
                F.lit("operation '"),
                F.coalesce(F.col(OPERATION_RAW_COLUMN), F.lit("(none)")),
                F.lit("' is not one of c, u, d, r, t (create, update, delete, read, truncate)"),
            ),
        )
    ]
    for field in table.changes.sequence_by:
        raw = F.col(SEQUENCE_PREFIX + field.alias)
        problems.append(
            F.when(raw.isNull(), F.lit(f"sequence field '{field.field}' is missing")).when(
                raw.try_cast(field.type).isNull(),
                F.concat(
                    F.lit(f"sequence field '{field.field}' ({field.type}): value '"),
                    raw,
                    F.lit("' does not cast"),
                ),
            )
        )
    for column in table.columns:
        raw = F.col(column.name)
        loose = dataclasses.replace(column, nullable=True)
        problems.append(F.when(operation != "t", column_message(raw, typed[column.name], loose)))
        required_for = (
            operation.isin(*IMAGE_OPERATIONS, "d")
            if column.key
            else has_image & F.lit(not column.nullable)
        )
        kind = "key column" if column.key else "non-nullable column"
        problems.append(
            F.when(required_for & raw.isNull(), F.lit(f"{kind} '{column.name}' is empty"))
        )
    for column in table.key_columns:
        raw = F.col(BEFORE_PREFIX + column.name)
        problems.append(
            F.when(
                (operation == "u") & raw.isNotNull() & typed_before[column.name].isNull(),
                F.concat(
                    F.lit(f"before image: column '{column.name}' ({column.type}): value '"),
                    raw,
                    F.lit("' does not cast"),
                ),
            )
        )
    if table.is_keyless:
        no_before = F.lit(True)
        for column in table.key_columns:
            no_before = no_before & F.col(BEFORE_PREFIX + column.name).isNull()
        problems.append(
            F.when(
                (operation == "u") & no_before,
                F.lit(
                    "an update of a table without a key needs its before image (a debezium "
                    "envelope), or deliver it as a delete and a create"
                ),
            )
        )
    return problems


def typed_events(raw: DataFrame, table: TableConfig, values_map: Column) -> DataFrame:
    """Cast, check and hash the events of :func:`raw_events` / :func:`raw_table_events`.

    Parameters
    ----------
    raw : DataFrame
        The events with every field as text.
    table : TableConfig
        The feed's table config.
    values_map : Column
        The raw values by column name, kept for rejected events.

    Returns
    -------
    DataFrame
        The stage columns (see the module doc) plus the reject detail columns.

    """
    assert table.changes is not None
    operation = _normalized_operation(F.col(OPERATION_RAW_COLUMN))
    typed = {c.name: typed_value(F.col(c.name), c) for c in table.columns}
    typed_before = {
        c.name: typed_value(F.col(BEFORE_PREFIX + c.name), c) for c in table.key_columns
    }
    malformed = F.col("_corrupt_record").isNotNull()
    problems = F.array_compact(
        F.array(
            F.when(
                malformed,
                F.lit("malformed event: the line is not JSON (or a malformed csv row)"),
            ),
            *[
                F.when(~malformed, p)
                for p in _event_problems(table, operation, typed, typed_before)
            ],
        )
    )
    errors = F.when(F.size(problems) > 0, problems)
    sequence = F.struct(
        *[
            F.col(SEQUENCE_PREFIX + f.alias).try_cast(f.type).alias(f.alias)
            for f in table.changes.sequence_by
        ]
    )
    before_present = F.lit(False)
    for column in table.key_columns:
        before_present = before_present | F.col(BEFORE_PREFIX + column.name).isNotNull()
    cast = raw.select(
        *[typed[c.name].alias(c.name) for c in table.columns],
        operation.alias("event_op"),
        sequence.alias("event_sequence"),
        F.when(
            (operation == "u") & before_present, _identity_hash(typed_before, table.key_columns)
        ).alias("before_keyhash"),
        errors.alias("_row_errors"),
        F.when(errors.isNotNull(), values_map).alias("_raw_values"),
        F.when(errors.isNotNull(), F.col(LINE_COLUMN)).alias("_raw_line"),
        "_source_file",
        "_block_start",
        "_row_id",
    )
    hashed = with_row_hashes(cast, list(table.key_columns), list(table.compared_columns))
    is_truncate = F.col("event_op") == "t"
    same_key = F.col("before_keyhash") == F.col("keyhash")
    return hashed.select(
        *[c.name for c in table.columns],
        F.when(~is_truncate, F.col("keyhash")).alias("keyhash"),
        F.when(F.col("event_op").isin(*IMAGE_OPERATIONS), F.col("nonkeyhash")).alias("nonkeyhash"),
        # A primary-key update that keeps its key is a plain update; without a key, the
        # before image is the row that goes away, whatever the after image is.
        (
            F.col("before_keyhash")
            if table.is_keyless
            else F.when(~same_key, F.col("before_keyhash"))
        ).alias("before_keyhash"),
        "event_op",
        "event_sequence",
        "_row_errors",
        "_raw_values",
        "_raw_line",
        "_source_file",
        "_block_start",
        "_row_id",
    )


def fail_on_conflicting_events(table: TableConfig, date: str, loaded: DataFrame) -> None:
    """Refuse a feed in which two different events of one key share a sequence.

    The same event delivered twice is harmless (it is applied once); two different events
    at one position could be applied in either order. The stage is bucketed by ``keyhash``,
    so this aggregation needs no shuffle.
    """
    conflicts = (
        loaded.where(F.col("keyhash").isNotNull())
        .groupBy("keyhash", "event_sequence")
        .agg(
            F.count_distinct(F.col("event_op"), F.coalesce(F.col("nonkeyhash"), F.lit(b""))).alias(
                "versions"
            ),
            F.array_sort(F.collect_set("_source_file")).alias("files"),
            F.first(F.struct(*[c.name for c in table.key_columns])).alias("key"),
        )
        .where(F.col("versions") > 1)
    )
    examples = conflicts.limit(10).collect()
    if not examples:
        return
    assert table.changes is not None
    fields = ", ".join(f.field for f in table.changes.sequence_by)
    lines = [
        f"  - key {row['key'].asDict()}, sequence {tuple(row['event_sequence'])}: "
        f"{row['versions']} different events (in {', '.join(row['files'])})"
        for row in examples
    ]
    raise InputDataError(
        f"table '{table.name}', business date {date}: different events of one key share a "
        f"sequence ({fields}), so their order is unknown; nothing was written to the state "
        "or history.\n"
        + "\n".join(lines)
        + f"\nAdd a field that tells them apart to changes.sequence_by in {table.config_file} "
        "(e.g. source.row after source.pos for a MySQL binlog) and re-run the date."
    )


def report_skipped_events(
    spark: SparkSession, table: TableConfig, date: str, loaded: DataFrame, state: str
) -> int:
    """Say how many loaded events are at or below the table's watermark (and so skipped).

    Re-delivered events are expected and change nothing; but an event that arrives after
    later events were applied is late, and is skipped too: the message says how to apply it.
    Returns the number of skipped events.
    """
    if not spark.catalog.tableExists(state):
        return 0
    watermark = (
        spark.table(state)
        .where((F.col("operation") == "W") & (F.col("business_date") < F.lit(date).cast("date")))
        .orderBy(F.col("business_date").desc())
        .select(F.col("event_sequence").alias("_watermark"))
        .limit(1)
        .where(F.col("_watermark").isNotNull())  # no event applied yet
    )
    counted = (
        loaded.crossJoin(F.broadcast(watermark))
        .groupBy("_watermark")
        .agg(F.count_if(F.col("event_sequence") <= F.col("_watermark")).alias("skipped"))
        .collect()
    )
    if not counted:
        return 0
    skipped = int(counted[0]["skipped"])
    watermark_value = tuple(counted[0]["_watermark"])
    if skipped:
        print(
            f"hashcdc: table '{table.name}', business date {date}: {skipped} event(s) at or "
            f"below the watermark {watermark_value} were skipped. Re-delivered events change "
            "nothing; an event that arrived after later ones were applied is late: put its file "
            "in the landing folder of the date it belongs to and run `hashcdc replay --from "
            "<that date>` to apply it in order."
        )
    return skipped
