"""The change-event stage: one row per event of a table's change feed for a business date.

Called through :func:`hashcdc.pipeline.stage.typecast_and_hash` for ``extract_type: changes``, with
the raw events (still text) its format's reader gives (:mod:`hashcdc.pipeline.inputs`). Events
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
``event_op`` (``c``/``u``/``d``/``r``/``t``; null for a tombstone, which is only counted),
``event_sequence`` (a struct of the ``sequence_by`` fields, typed, compared field by field),
``event_id`` (a hash of the event's content) and ``is_new_event`` (no earlier date applied
it: :class:`PriorState`, the one place that decides). Values are decoded by the event's
schema when it carries one; a connector's placeholder for a value it could not read means
"unchanged" and is filled from the key's value before the event. Events that cannot be
applied get ``_row_errors`` like any rejected row. JSON is parsed once per line into a
VARIANT; every field is taken from it with native functions, nothing runs in Python per
event.

Over 400 lines: the events' typing, identity, order and what earlier dates applied
(:class:`PriorState`) are one stage built in one plan, sharing the raw events' columns;
reading the formats is :mod:`hashcdc.pipeline.inputs`', applying the events the state macros'.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.column_types import column_type
from hashcdc.config import (
    OPERATION_SPELLINGS,
    ColumnConfig,
    SequenceField,
    TableConfig,
)
from hashcdc.errors import InputDataError
from hashcdc.pipeline.casting import (
    column_message,
    is_unavailable,
    present_messages,
    typed_projection,
    typed_value,
    unavailable_forms,
    values_map,
)
from hashcdc.pipeline.columns import (
    BLOCK_START,
    CORRUPT_RECORD,
    EVENT_TIME_RAW,
    LINE_COLUMN,
    RAW_LINE,
    RAW_VALUES,
    ROW_ERRORS,
    ROW_ID,
    SOURCE_FILE,
)
from hashcdc.pipeline.hashing import (
    canonical_value,
    digest,
    hash_units,
    row_hashes,
    typed_row_hash,
    with_hashes,
)
from hashcdc.pipeline.inputs import table_reader
from hashcdc.pipeline.inputs.events import (
    BEFORE_PREFIX,
    LOGICAL_PREFIX,
    OPERATION_RAW_COLUMN,
    SCALE_PREFIX,
    SEQUENCE_PREFIX,
    TOMBSTONE_COLUMN,
)
from hashcdc.pipeline.projections import built_once, selected
from hashcdc.pipeline.transports import transport_of

UNAVAILABLE_COLUMN = "_unavailable_columns"
# Characters JSON writers leave as they are inside a string (they must escape only quotes,
# backslashes and control characters, and none escapes these).
_LITERAL_IN_JSON = re.compile(r"[A-Za-z0-9_+=.:-]+")
# Which event operations carry which image.
IMAGE_OPERATIONS = ("c", "u", "r")


def _normalized_operation(raw: Column) -> Column:
    """The event's operation as Debezium's letter, null when it is not one we know."""
    spellings = F.create_map(
        *[item for pair in OPERATION_SPELLINGS.items() for item in map(F.lit, pair)]
    )
    return F.element_at(spellings, F.lower(F.trim(raw)))


def _sequence_problem(field: SequenceField) -> Column:
    """Why an event's sequence field cannot order it; null when it can."""
    raw = F.col(SEQUENCE_PREFIX + field.alias)
    hint = ""
    if field.type != "string":
        hint = (
            f"; if every event fails like this, the field is text: give it as "
            f"{{field: {field.field}, type: string}} in changes.sequence_by"
        )
    missing = F.lit(f"sequence field '{field.field}' is missing")
    if field.missing is not None:
        missing = F.lit(None)
    return F.when(raw.isNull(), missing).when(
        raw.try_cast(field.type).isNull(),
        F.concat(
            F.lit(f"sequence field '{field.field}' ({field.type}): value '"),
            raw,
            F.lit(f"' does not cast{hint}"),
        ),
    )


def _sequence_value(field: SequenceField) -> Column:
    """A sequence field's typed value (the type's lowest value when missing, if allowed)."""
    value = F.col(SEQUENCE_PREFIX + field.alias).try_cast(field.type)
    if field.missing is None:
        return value
    lowest = F.lit(column_type(field.type).lowest).cast(field.type)
    return F.when(F.col(SEQUENCE_PREFIX + field.alias).isNull(), lowest).otherwise(value)


def _event_problems(
    table: TableConfig,
    operation: Column,
    typed: dict[str, Column],
    typed_before: dict[str, Column],
    unavailable: dict[str, Column],
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
    problems += [_sequence_problem(field) for field in table.changes.sequence_by]
    for column in table.columns:
        raw = F.col(column.name)
        loose = dataclasses.replace(column, nullable=True)
        # A delete needs its key only: the values of its before image are never used.
        checked = has_image if not column.key else operation != "t"
        if column.name in unavailable:
            checked = checked & ~unavailable[column.name]
        problems.append(F.when(checked, column_message(raw, typed[column.name], loose)))
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
        for name, flag in unavailable.items():
            problems.append(
                F.when(
                    flag,
                    F.lit(
                        f"column '{name}' is unavailable (the connector's placeholder for an "
                        "unchanged value it could not read) in a table without a key, so the "
                        "row cannot be identified: give the source table REPLICA IDENTITY FULL"
                    ),
                )
            )
    return problems


def _typed(logical: frozenset[str], column: ColumnConfig, prefix: str = "") -> Column:
    """A raw event field cast to its column, decoded by the event's schema when it has one.

    ``logical`` names the raw events' fields of the event schema's logical types.
    """
    if LOGICAL_PREFIX + column.name not in logical:
        return typed_value(F.col(prefix + column.name), column)
    return typed_value(
        F.col(prefix + column.name),
        column,
        F.col(LOGICAL_PREFIX + column.name),
        F.col(SCALE_PREFIX + column.name),
    )


def _event_id(table: TableConfig) -> Column:
    """A 128-bit identity of an event's content (not its position), over the cast frame.

    Two deliveries of one event, in either envelope form, get the same id; it tells apart
    the events that share one position (a snapshot's reads, the rows of one statement).
    The unit names of the operation, the before image and the unavailable columns contain
    a character no column name has.
    """
    units = [
        (":op", F.col("event_op")),
        (":before", F.hex("before_keyhash")),
        (":unavailable", F.array_join(F.col(UNAVAILABLE_COLUMN), ",")),
        *[(c.hash_name, canonical_value(F.col(c.name), c.type)) for c in table.columns],
    ]
    return digest(hash_units(units))


def typed_events(
    raw: DataFrame,
    table: TableConfig,
    prior: PriorState,
    placeholders: bool | None = None,
) -> DataFrame:
    """Cast, check and hash the events of :func:`raw_events` / :func:`raw_table_events`.

    Its projections name columns only: they are built once per process for the table's
    columns, feed settings, transport and the event schema's fields
    (:func:`~hashcdc.pipeline.projections.built_once`), not at every date or micro-batch.

    Parameters
    ----------
    raw : DataFrame
        The events with every field as text.
    table : TableConfig
        The feed's table config.
    prior : PriorState
        The state before the business date: its watermark, the events applied at the
        watermark's position, and the rows that fill unavailable values.
    placeholders : bool, optional
        Whether the events mention the unavailable-value placeholder, when a table
        group's stage looked for all its members at once (None: this looks itself).

    Returns
    -------
    DataFrame
        The stage columns (see the module doc) plus the reject detail columns.

    """
    assert table.changes is not None
    transport = transport_of(table)
    logical = frozenset(name for name in raw.columns if name.startswith(LOGICAL_PREFIX))
    key = ("typed_events", table.columns, table.changes, type(transport).__name__, logical)
    built = built_once(key, lambda: _EventProjections.of(table, logical))
    flagged = selected(raw, (key, "flagged"), lambda: ["*", *built.flags])
    staged = selected(flagged, (key, "staged"), lambda: ["*", *built.typed])
    cast = selected(staged, (key, "cast"), lambda: built.cast)
    keyed = with_hashes(cast, {"keyhash": list(table.key_columns)})
    identified = selected(keyed, (key, "identified"), lambda: ["*", built.event_id])
    if prior.deferred:
        marked = selected(identified, (key, "deferred"), lambda: ["*", built.not_marked])
    else:
        marked = prior.mark_new_events(identified, transport.partitioned)
    if placeholders is None and built.unavailable and not table.is_keyless:
        placeholders = _holds_unavailable(raw, keyed, table)
    if built.unavailable and not table.is_keyless and placeholders:
        marked = prior.fill_unavailable(marked, table)
    hashed = with_hashes(marked, _image_hashes(table))
    return selected(hashed, (key, "stage"), lambda: built.stage)


def _image_hashes(table: TableConfig) -> dict[str, list[ColumnConfig]]:
    """The hashes of an event's row image: all but ``keyhash``, which comes first."""
    return {name: cols for name, cols in row_hashes(table).items() if name != "keyhash"}


@dataclass(frozen=True)
class _EventProjections:
    """:func:`typed_events`' projections, each a list of columns (or one), frame-free."""

    flags: list[Column]
    typed: list[Column]
    cast: list[Column | str]
    event_id: Column
    not_marked: Column
    stage: list[Column | str]
    # Whether any column can hold the unavailable-value placeholder.
    unavailable: bool

    @classmethod
    def of(cls, table: TableConfig, logical: frozenset[str]) -> _EventProjections:
        """Build them for a feed's table config and the event schema's logical fields."""
        assert table.changes is not None
        placeholder = table.changes.unavailable_value
        transport = transport_of(table)
        # Each piece that later steps use several times is projected once, in its own column.
        operation_value = _normalized_operation(F.col(OPERATION_RAW_COLUMN))
        flag_names = {}
        if placeholder is not None:
            flag_names = {c.name: f"_unavailable_{c.name}" for c in table.main_columns if not c.key}
        flags = [
            operation_value.alias("_operation"),
            *[
                (
                    operation_value.isin(*IMAGE_OPERATIONS)
                    & is_unavailable(F.col(name), str(placeholder))
                ).alias(flag)
                for name, flag in flag_names.items()
            ],
        ]
        operation = F.col("_operation")
        unavailable = {name: F.col(flag) for name, flag in flag_names.items()}
        typed_values = {c.name: _typed(logical, c) for c in table.columns}
        typed_values = {
            name: F.when(~unavailable[name], value) if name in unavailable else value
            for name, value in typed_values.items()
        }
        typed_values |= {
            BEFORE_PREFIX + c.name: _typed(logical, c, BEFORE_PREFIX) for c in table.key_columns
        }
        projected, typed_refs = typed_projection(typed_values)
        typed = {c.name: typed_refs[c.name] for c in table.columns}
        typed_before = {c.name: typed_refs[BEFORE_PREFIX + c.name] for c in table.key_columns}
        malformed = F.col(CORRUPT_RECORD).isNotNull()
        tombstone = F.col(TOMBSTONE_COLUMN)
        problems = present_messages(
            [
                F.when(
                    malformed,
                    F.lit("malformed event: the line is not JSON (or a malformed csv row)"),
                ),
                *[
                    F.when(~malformed, p)
                    for p in _event_problems(table, operation, typed, typed_before, unavailable)
                ],
            ]
        )
        errors = F.when(~tombstone, problems)
        sequence = F.struct(*[_sequence_value(f).alias(f.alias) for f in table.changes.sequence_by])
        before_present = F.lit(False)
        for column in table.key_columns:
            before_present = before_present | F.col(BEFORE_PREFIX + column.name).isNotNull()
        unavailable_names = (
            present_messages(
                [F.when(flag, F.lit(name)) for name, flag in sorted(unavailable.items())]
            )
            if unavailable
            else F.lit(None).cast("array<string>")
        )
        cast: list[Column | str] = [
            *[typed[c.name].alias(c.name) for c in table.columns],
            # A tombstone is no event: it is counted, never applied.
            F.when(~tombstone, operation).alias("event_op"),
            sequence.alias("event_sequence"),
            F.timestamp_millis(F.col(EVENT_TIME_RAW).try_cast("bigint")).alias("event_time"),
            transport.partition(F.col(SOURCE_FILE)).alias("event_partition"),
            F.when(
                (operation == "u") & before_present,
                typed_row_hash(typed_before, table.key_columns),
            ).alias("before_keyhash"),
            unavailable_names.alias(UNAVAILABLE_COLUMN),
            errors.alias(ROW_ERRORS),
            F.when(errors.isNotNull(), values_map(table)).alias(RAW_VALUES),
            F.when(errors.isNotNull(), F.col(LINE_COLUMN)).alias(RAW_LINE),
            SOURCE_FILE,
            BLOCK_START,
            ROW_ID,
        ]
        image_hashes = _image_hashes(table)
        is_truncate = F.col("event_op") == "t"
        same_key = F.col("before_keyhash") == F.col("keyhash")
        stage: list[Column | str] = [
            *[c.name for c in table.columns],
            F.when(~is_truncate & F.col("event_op").isNotNull(), F.col("keyhash")).alias("keyhash"),
            *[
                F.when(F.col("event_op").isin(*IMAGE_OPERATIONS), F.col(name)).alias(name)
                for name in image_hashes
            ],
            # A primary-key update that keeps its key is a plain update; without a key, the
            # before image is the row that goes away, whatever the after image is.
            (
                F.col("before_keyhash")
                if table.is_keyless
                else F.when(~same_key, F.col("before_keyhash"))
            ).alias("before_keyhash"),
            "event_op",
            "event_sequence",
            "event_id",
            "is_new_event",
            "event_time",
            "event_partition",
            ROW_ERRORS,
            RAW_VALUES,
            RAW_LINE,
            SOURCE_FILE,
            BLOCK_START,
            ROW_ID,
        ]
        return cls(
            flags=flags,
            typed=projected,
            cast=cast,
            event_id=_event_id(table).alias("event_id"),
            not_marked=F.lit(None).cast("boolean").alias("is_new_event"),
            stage=stage,
            unavailable=bool(unavailable),
        )


def shows_verbatim_in_json(texts: list[str]) -> bool:
    """Whether every text appears as it is in any JSON line holding it as a string value."""
    return all(_LITERAL_IN_JSON.fullmatch(text) for text in texts)


def _holds_unavailable(raw: DataFrame, events: DataFrame, table: TableConfig) -> bool:
    """Whether any event of the date holds an unavailable-value placeholder.

    For JSON events a scan of the text comes first: a line without any form of the
    placeholder holds none (JSON writers escape none of these characters), and the common
    feed has none, so its lines are not parsed twice. The exact test is an aggregate, not a
    filter: Spark would push a filter below the projections and parse each line once per
    column it tests.
    """
    mentions = placeholder_mentions(table)
    if mentions is not None and raw.where(mentions).isEmpty():
        return False
    found = events.agg(F.max(F.col(UNAVAILABLE_COLUMN).isNotNull()).alias("found")).first()
    return bool(found["found"])


def placeholder_mentions(table: TableConfig) -> Column | None:
    """Whether a line's text mentions the feed's unavailable-value placeholder.

    None when the text cannot tell: its lines are not its events, or the placeholder's
    forms do not show as they are in JSON (the values must then be looked at).
    """
    assert table.changes is not None and table.changes.unavailable_value is not None
    *plain_forms, _ = unavailable_forms(table.changes.unavailable_value)
    if not table_reader(table).line_holds_event or not shows_verbatim_in_json(plain_forms):
        return None
    line = F.col(LINE_COLUMN)
    return functools.reduce(operator.or_, [line.contains(form) for form in plain_forms])


def read_phase(operation: Column) -> Column:
    """Where an event stands among the events at its position: snapshot reads first.

    A snapshot's reads carry the log position the snapshot started at, which the first
    streamed change may share (a MySQL binlog position); the streamed change is later.
    """
    return F.when(operation == "r", F.lit(0)).otherwise(F.lit(1))


@dataclass(frozen=True)
class PriorState:
    """The state before a business date, as the change-event stage needs it.

    ``rows`` is ``<name>_state`` at the version of the latest date before it (None before
    the first date). Its ``W`` row holds the watermark (the greatest sequence applied so
    far); its ``A`` rows hold, as ``nonkeyhash``, the ``event_id`` of every event applied
    *at* a watermark's position. A topic's events also have a watermark per Kafka
    partition, its ``P`` rows (the partition's number as the text of ``keyhash``): a
    stream reads partitions to different points, so a partition behind the others has
    events below the table's watermark that are not applied yet.
    """

    rows: DataFrame | None
    # The events are marked later, with their table group's (``group_stage``): not here.
    deferred: bool = False

    @classmethod
    def at(
        cls,
        spark: SparkSession,
        state: str | None,
        version: int | None,
        member: str | None = None,
    ) -> PriorState:
        """``state`` at ``version`` (a date's plan says which: ``prior_version``); none: no rows.

        A version, not the table: the stage may be read again after the batch's commit.
        ``member``: a table group's state, of which this member's rows.
        """
        if state is None or version is None:
            return cls(None)
        prior = cls(spark.sql(f"select * from {state} version as of {version}"))
        return prior if member is None else prior.of_member(member)

    def of_member(self, member: str) -> PriorState:
        """Of a table group's state, one member's rows (its watermark, A and P rows)."""
        return PriorState(
            None if self.rows is None else self.rows.where(F.col("table_name") == member)
        )

    def watermark(self, by: tuple[str, ...] = ()) -> DataFrame | None:
        """One row: the ``_watermark``, and how many ``A`` and ``P`` rows the state has.

        ``_applied_at_watermark`` counts the ``A`` rows, ``_partitions`` the ``P`` rows;
        ``_partition_floor`` is the watermark of partitions without a ``P`` row of their
        own (the ``P`` row with no partition). ``by``: a row per value of these columns (a
        table group's state: per member).
        """
        if self.rows is None:
            return None
        operation = F.col("operation")
        floor = (operation == "P") & F.col("keyhash").isNull()
        return (
            self.rows.where(operation.isin("W", "A", "P"))
            .groupBy(*by)
            .agg(
                F.max(F.when(operation == "W", F.col("event_sequence"))).alias("_watermark"),
                F.count_if(operation == "A").alias("_applied_at_watermark"),
                F.count_if(operation == "P").alias("_partitions"),
                F.max(F.when(floor, F.col("event_sequence"))).alias("_partition_floor"),
            )
        )

    def mark_new_events(
        self, events: DataFrame, partitioned: bool = False, by: tuple[str, ...] = ()
    ) -> DataFrame:
        """Add ``is_new_event``: whether an event has not been applied by an earlier date.

        New are the events above their watermark, and those *at* it whose ``event_id`` is
        not among the ``A`` rows (a snapshot's reads landed over several dates). A state
        written before ``A`` rows existed has none: there, events at the watermark count as
        applied. ``partitioned`` (a topic): an event's watermark is its partition's ``P``
        row; a partition without one has the floor once the state has ``P`` rows, and the
        table's watermark before (a state a one-partition topic or files wrote before
        partitions had watermarks). ``by``: the columns the events and the state's rows
        share whose values part them (a table group's: its member, ``table_name``): each
        its own watermark, ``A`` and ``P`` rows, in one pass over all members' events.
        """
        summary = self.watermark(by)
        if summary is None:
            marked = events.withColumn("is_new_event", F.col("event_op").isNotNull())
            return marked.select(*events.columns, "is_new_event")

        # The state's side of a `by` column is renamed (each join its own name), and
        # compared with the events'.
        def prior_by(side: str) -> list[Column]:
            return [F.col(c).alias(f"_{side}_{c}") for c in by]

        def same(side: str, condition: Column) -> Column:
            parts = [F.col(c) == F.col(f"_{side}_{c}") for c in by]
            return functools.reduce(operator.and_, parts, condition)

        applied = self.rows.where(F.col("operation") == "A").select(
            *prior_by("applied"),
            F.col("nonkeyhash").alias("_applied_id"),
            F.lit(True).alias("_was_applied"),
        )
        if by:
            joined = events.join(F.broadcast(summary), list(by), "left")
        else:
            joined = events.crossJoin(F.broadcast(summary))
        watermark = F.col("_watermark")
        if partitioned:
            partitions = self.rows.where(F.col("operation") == "P").select(
                *prior_by("partition"),
                F.col("keyhash").cast("string").cast("int").alias("_partition"),
                F.col("event_sequence").alias("_partition_watermark"),
            )
            on_partition = F.col("event_partition") == F.col("_partition")
            joined = joined.join(F.broadcast(partitions), same("partition", on_partition), "left")
            watermark = (
                F.when(F.col("event_partition").isNull(), watermark)
                .when(
                    F.col("_partitions") > 0,
                    F.coalesce(F.col("_partition_watermark"), F.col("_partition_floor")),
                )
                .otherwise(watermark)
            )
        on_event = F.col("event_id") == F.col("_applied_id")
        joined = joined.join(applied, same("applied", on_event), "left")
        sequence = F.col("event_sequence")
        at_watermark_new = (F.col("_applied_at_watermark") > 0) & F.col("_was_applied").isNull()
        is_new = F.col("event_op").isNotNull() & (
            watermark.isNull()
            | (sequence > watermark)
            | ((sequence == watermark) & at_watermark_new)
        )
        return joined.select(*events.columns, is_new.alias("is_new_event"))

    def fill_unavailable(self, events: DataFrame, table: TableConfig) -> DataFrame:
        """Replace unavailable values by the key's value before the event.

        That is the latest value of the column among the key's earlier new events of the
        date that carried it, or else the previous state's value (of the before image's
        key). Called only when some event of the date holds a placeholder (a key's
        earlier events need a window over the date's events).
        """
        carried = F.col("is_new_event") & F.col(ROW_ERRORS).isNull()
        carried = carried & F.col("event_op").isin(*IMAGE_OPERATIONS)
        earlier = (
            Window.partitionBy("keyhash")
            .orderBy("event_sequence", read_phase(F.col("event_op")))
            .rowsBetween(Window.unboundedPreceding, -1)
        )
        non_key = [c.name for c in table.main_columns if not c.key]
        framed = events
        if self.rows is not None:
            previous = self.rows.where(F.col("operation").isin("I", "U", "N", "X")).select(
                F.col("keyhash").alias("_lookup_keyhash"),
                *[F.col(name).alias(f"_previous_{name}") for name in non_key],
            )
            lookup = F.coalesce(F.col("before_keyhash"), F.col("keyhash"))
            framed = events.join(previous, lookup == F.col("_lookup_keyhash"), "left")
        filled = []
        for name in non_key:
            missing = F.coalesce(F.array_contains(F.col(UNAVAILABLE_COLUMN), name), F.lit(False))
            supplied = F.last(
                F.when(carried & ~missing, F.struct(F.col(name).alias("value"))), ignorenulls=True
            ).over(earlier)
            fallback = F.col(f"_previous_{name}") if self.rows is not None else F.lit(None)
            value = F.when(supplied.isNotNull(), supplied["value"]).otherwise(fallback)
            filled.append(F.when(missing, value).otherwise(F.col(name)).alias(name))
        return framed.select(*[F.col(c) for c in events.columns if c not in non_key], *filled)


def fail_on_conflicting_events(table: TableConfig, date: str, loaded: DataFrame) -> None:
    """Refuse a feed in which two different events of one key share a sequence.

    The same event delivered twice is harmless (it is applied once); two different events
    at one position could be applied in either order. A snapshot read and a streamed
    change at one position are ordered (:func:`read_phase`). The stage is partitioned
    by ``keyhash`` in the session, so this aggregation needs no shuffle.
    """
    conflicts = (
        loaded.where(F.col("keyhash").isNotNull())
        .groupBy("keyhash", "event_sequence", read_phase(F.col("event_op")))
        .agg(
            F.count_distinct(F.col("event_id")).alias("versions"),
            F.array_sort(F.collect_set(SOURCE_FILE)).alias("files"),
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
    table: TableConfig, date: str, loaded: DataFrame, prior: PriorState
) -> None:
    """Say how many loaded events were not applied, and how many tombstones were ignored.

    Re-delivered events are expected and change nothing; but an event that arrives after
    later events were applied is late, and is skipped too: the message says how to apply it.
    """
    counts = loaded.agg(
        F.count_if(F.col("event_op").isNull()).alias("tombstones"),
        F.count_if(F.col("event_op").isNotNull() & ~F.col("is_new_event")).alias("skipped"),
    ).first()
    where = f"hashcdc: table '{table.name}', business date {date}"
    if counts["tombstones"]:
        print(f"{where}: {counts['tombstones']} tombstone(s) ignored (deletes are their events).")
    if not counts["skipped"]:
        return
    summary = prior.watermark()
    watermark = summary.first()["_watermark"] if summary is not None else None
    shown = tuple(watermark) if watermark is not None else "(none)"
    print(
        f"{where}: {counts['skipped']} event(s) at or below the watermark {shown} were skipped "
        "(already applied). Re-delivered events change nothing; an event that arrived after "
        "later ones were applied is late: put its file in the landing folder of the date it "
        "belongs to and run `hashcdc replay --from <that date>` to apply it in order."
    )
