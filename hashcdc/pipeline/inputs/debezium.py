"""Debezium's JSON change events, one per line: the envelope and its flattened form.

``debezium`` is the envelope, ``debezium_flat`` the new-record-state form; either with or
without the schema wrapper.

Each line is parsed once into a VARIANT; every field is taken from it with native
functions. What the two forms share (parsing, the schema wrapper's logical types, the
sequence fields) is :class:`JsonEventsReader`; each form says where its operation, row
image, key before image and commit time are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.column_types import column_type
from hashcdc.config import ColumnConfig, SequenceField, TableConfig
from hashcdc.errors import InputDataError
from hashcdc.pipeline.columns import (
    BLOCK_START,
    CORRUPT_RECORD,
    EVENT_TIME_RAW,
    LINE_COLUMN,
    ROW_ID,
    SOURCE_FILE,
)
from hashcdc.pipeline.evolution.schema_changes import (
    read_schema_changes,
    shape_problems,
)
from hashcdc.pipeline.extract import read_event_lines
from hashcdc.pipeline.header import SAMPLE_ROWS, inferred_type, new_columns_suggestion
from hashcdc.pipeline.inputs.base import Reader
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
from hashcdc.relations import MEMBER_COLUMN
from hashcdc.runtime.hadoop import HadoopFiles

# A JSON line parsed, its envelope (the line or its schema wrapper's payload) and the
# wrapper's field list: projected once per line, read by every field.
PARSED_COLUMN = "_parsed"
ENVELOPE_COLUMN = "_envelope"
SCHEMA_FIELDS_COLUMN = "_schema_fields"
# Per event: value field name -> its schema's logical type and scale.
LOGICAL_TYPES_COLUMN = "_logical_types"
# The schema wrapper's field list: the envelope's before/after structs (with their fields)
# or, for the flattened form, the row's fields themselves.
_SCHEMA_FIELDS_TYPE = (
    "array<struct<field:string,name:string,parameters:map<string,string>,"
    "fields:array<struct<field:string,name:string,parameters:map<string,string>>>>>"
)
# A field of the envelope as text, by its path.
Text = Callable[..., Column]


def json_path(*parts: str) -> str:
    """A JSON path to nested fields, each name quoted (names may hold dots)."""
    return "$" + "".join(f"['{part}']" for part in parts)


def _sequence_path(field: SequenceField) -> str:
    return json_path(*field.field.split("."))


class JsonEventsReader(Reader):
    """JSON lines, one change event each (the schema wrapper optional)."""

    carries_events: ClassVar[bool] = True
    line_holds_event: ClassVar[bool] = True
    # Where a row image sits in a line, for the notice of fields the config lacks (an
    # event without one, a truncate, has no fields to name).
    image_paths: ClassVar[tuple[str, ...]]

    def read_rows(self, spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
        """The lines (the rejects count a split's rows from them)."""
        return read_event_lines(spark, table, files)

    def check_columns(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        business_date: str,
        sampled: list[str] | None = None,
        heads: dict[str, bytes] | None = None,
    ) -> None:
        """Hold the date's schema-change events against the config; name unloaded fields.

        A change of the source's shape that the config does not say yet (a column dropped
        or retyped: :func:`hashcdc.pipeline.evolution.schema_changes.shape_problems`) refuses
        the date before
        anything is written, with the YAML that says it. Events are loaded whatever other
        fields they carry, so those are a notice, not a refusal: it shows the YAML lines
        that would load them, typed from the source's schema change where capture landed
        one, else inferred from a sample. ``sampled``: the fields of :meth:`column_sample`,
        read already (a table group reads its members' in one query).
        """
        del heads  # the events are sampled, not their first bytes
        announced = self._check_shape(spark, table, files, business_date)
        if sampled is None:
            sampled = [row["key"] for row in self.column_sample(spark, table, files).collect()]
        known = {name.lower() for c in table.columns for name in c.source_fields}
        known |= {f.field.lower() for f in table.changes.sequence_by} if table.changes else set()
        new = sorted(
            key
            for key in sampled
            if key.lower() not in known and not key.startswith("__") and key not in announced
        )
        if not new:
            return
        samples = (
            self._images(read_event_lines(spark, table, files).limit(SAMPLE_ROWS))
            .select(*[F.get_json_object("image", f"$['{key}']").alias(key) for key in new])
            .collect()
        )
        columns = {key: inferred_type([row[key] for row in samples]) for key in new}
        print(
            f"hashcdc: table '{table.name}', business date {business_date}: the events "
            f"carry field(s) that {table.config_file} does not have, and they are not "
            f"loaded: {', '.join(new)}."
            f"{new_columns_suggestion(columns, table, business_date)}",
            flush=True,
        )

    def column_sample(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        lines: DataFrame | None = None,
        by: Column | None = None,
    ) -> DataFrame:
        """The distinct fields (``key``) of the row images of a sample of the events.

        ``by``: of all the lines, per table (``table_name``).
        """
        if lines is None:
            lines = read_event_lines(spark, table, files)
        keys = F.explode(F.json_object_keys("image")).alias("key")
        if by is None:
            return self._images(lines.limit(SAMPLE_ROWS)).select(keys).distinct()
        images = self._images(lines, [by.alias(MEMBER_COLUMN)])
        return images.select(MEMBER_COLUMN, keys).distinct()

    def _images(self, lines: DataFrame, named: list[Column] | None = None) -> DataFrame:
        """The row images (``image``, JSON text) of the lines' events (and ``named``)."""
        line = F.col(LINE_COLUMN)
        image = F.coalesce(*[F.get_json_object(line, path) for path in self.image_paths])
        return lines.select(image.alias("image"), *(named or [])).where(
            F.col("image").startswith("{")
        )

    @staticmethod
    def _check_shape(
        spark: SparkSession, table: TableConfig, files: list[str], business_date: str
    ) -> set[str]:
        """Refuse, or report, the date's schema changes; the fields the report named."""
        landed = transport_of(table).schema_change_files(spark, files)
        if not landed:
            return set()
        hadoop = HadoopFiles.of(spark)
        events = read_schema_changes(hadoop.read_text(file) for file in landed)
        review = shape_problems(table, events, business_date)
        if review.refusals:
            raise InputDataError(
                "\n".join(review.refusals)
                + "\nNothing was written for the table; say the change in its config, then "
                "run the date again (docs/schema-evolution.md)."
            )
        for notice in review.notices:
            print(f"hashcdc: {notice}", flush=True)
        return review.announced

    def event_parts(
        self, table: TableConfig, text: Text, any_text: Callable[[str | None, ColumnConfig], Column]
    ) -> tuple[Column, dict[str, Column], dict[str, Column], Column, Column]:
        """The event's operation, row image, key before image, value fields and commit time.

        ``text(*path)`` is a field of the envelope as text; ``any_text(image, column)`` a
        column's value in an image (``None``: the envelope itself) under any of its names.
        The value fields are the schema wrapper's fields that describe the image's values.
        """
        raise NotImplementedError

    def raw_events(
        self,
        spark: SparkSession,
        table: TableConfig,
        files: list[str],
        lines: DataFrame | None = None,
    ) -> DataFrame:
        """The events with every needed field as text (still uncast).

        Blank lines are left out. Tombstones (a ``null`` line, or the schema wrapper with a
        null payload, as Kafka's JSON converter writes them) are kept, flagged, to be
        counted; a line that is not JSON keeps its text in ``_corrupt_record``. Fields are
        looked up by each column's ``source_field``; when the event carries its schema, the
        logical type and scale of each date, time and decimal field are taken from it. The
        projections are built once per process for the table's columns and feed settings
        (:func:`~hashcdc.pipeline.projections.built_once`), not at every micro-batch.
        ``lines``: the files' lines, already read (a table group's stage reads them once).
        """
        key = ("raw_events", self.name, table.columns, table.changes)
        built = built_once(key, lambda: self._event_projections(table))
        # Each line is parsed once, in a projection of its own: every field below reads the
        # projected VARIANT (Spark keeps a projection that is used many times; inlined, the
        # parse would run once per field, and inside conditional branches it is not shared).
        if lines is None:
            lines = read_event_lines(spark, table, files)
        lines = lines.where(built.not_blank)
        lines = selected(lines, (key, "parsed"), lambda: ["*", built.parsed])
        lines = selected(lines, (key, "envelope"), lambda: ["*", *built.envelope])
        lines = selected(lines, (key, "logical"), lambda: ["*", built.logical_types])
        if files:
            lines = lines.where(transport_of(table).within_date(table, files, built.event_time))
        return selected(lines, (key, "raw"), lambda: built.raw)

    def _event_projections(self, table: TableConfig) -> _EventProjections:
        """:meth:`raw_events`' projections for a table config, frame-free."""
        assert table.changes is not None
        line = F.col(LINE_COLUMN)
        parsed = F.col(PARSED_COLUMN)
        wrapped_payload = F.try_variant_get(parsed, "$.payload", "variant")
        # The schema wrapper puts the envelope under "payload"; without it, it is the line.
        envelope_columns = [
            F.coalesce(wrapped_payload, parsed).alias(ENVELOPE_COLUMN),
            (
                F.coalesce(F.is_variant_null(parsed), F.lit(False))
                | F.coalesce(F.is_variant_null(wrapped_payload), F.lit(False))
            ).alias(TOMBSTONE_COLUMN),
            F.try_variant_get(parsed, "$.schema.fields", _SCHEMA_FIELDS_TYPE).alias(
                SCHEMA_FIELDS_COLUMN
            ),
        ]
        envelope = F.col(ENVELOPE_COLUMN)

        def text(*path: str) -> Column:
            return F.try_variant_get(envelope, json_path(*path), "string")

        def any_text(image: str | None, column: ColumnConfig) -> Column:
            # A renamed column: whichever of its names the event carries.
            paths = [(image, name) if image else (name,) for name in column.source_fields]
            return F.coalesce(*[text(*path) for path in paths])

        operation, image, before, value_fields, event_time = self.event_parts(table, text, any_text)
        # Each value field's logical type and scale, by field name: built once per event (a
        # higher-order function, evaluated outside generated code), then looked up per column.
        logical_types = F.map_from_entries(
            F.transform(
                value_fields,
                lambda field: F.struct(
                    field["field"],
                    F.struct(
                        field["name"].alias("name"),
                        field["parameters"]["scale"].alias("scale"),
                    ),
                ),
            )
        ).alias(LOGICAL_TYPES_COLUMN)
        logical = {}
        for column in table.columns:
            # Text columns too: a decimal landing in one holds the number's text.
            if column_type(column.type).connector_decoded:
                names = [F.lit(name) for name in column.source_fields]
                field = F.coalesce(*[F.element_at(F.col(LOGICAL_TYPES_COLUMN), n) for n in names])
                logical[LOGICAL_PREFIX + column.name] = field["name"]
                logical[SCALE_PREFIX + column.name] = field["scale"]
        sequence = {
            f.alias: F.try_variant_get(envelope, _sequence_path(f), "string")
            for f in table.changes.sequence_by
        }
        raw: list[Column | str] = [
            *[value.alias(name) for name, value in image.items()],
            *[value.alias(BEFORE_PREFIX + name) for name, value in before.items()],
            *[value.alias(name) for name, value in logical.items()],
            operation.alias(OPERATION_RAW_COLUMN),
            *[value.alias(SEQUENCE_PREFIX + alias) for alias, value in sequence.items()],
            event_time.alias(EVENT_TIME_RAW),
            F.when(parsed.isNull(), line).alias(CORRUPT_RECORD),
            TOMBSTONE_COLUMN,
            LINE_COLUMN,
            SOURCE_FILE,
            BLOCK_START,
            ROW_ID,
        ]
        return _EventProjections(
            not_blank=F.trim(line) != "",
            parsed=F.try_parse_json(line).alias(PARSED_COLUMN),
            envelope=envelope_columns,
            logical_types=logical_types,
            event_time=event_time,
            raw=raw,
        )


@dataclass(frozen=True)
class _EventProjections:
    """:meth:`JsonEventsReader.raw_events`' projections, in the order they are applied."""

    not_blank: Column
    parsed: Column
    envelope: list[Column]
    logical_types: Column
    # An event's commit time as text, which the transport's date filter reads.
    event_time: Column
    raw: list[Column | str]


class DebeziumReader(JsonEventsReader):
    """Debezium's envelope: ``op``, ``before``, ``after``, ``source``, ``ts_ms``."""

    name: ClassVar[str] = "debezium"
    description: ClassVar[str] = "Debezium's JSON envelope, one event per line"
    image_paths: ClassVar[tuple[str, ...]] = (
        "$.payload.after",
        "$.after",
        "$.payload.before",
        "$.before",
    )

    def event_parts(
        self, table: TableConfig, text: Text, any_text: Callable[[str | None, ColumnConfig], Column]
    ) -> tuple[Column, dict[str, Column], dict[str, Column], Column, Column]:
        """A delete's image is its before image, every other event's its after image."""
        operation = text("op")
        image = {
            c.name: F.when(operation == "d", any_text("before", c)).otherwise(any_text("after", c))
            for c in table.columns
        }
        before = {c.name: any_text("before", c) for c in table.key_columns}
        images = F.filter(F.col(SCHEMA_FIELDS_COLUMN), lambda f: f["field"].isin("after", "before"))
        event_time = F.coalesce(text("source", "ts_ms"), text("ts_ms"))
        return operation, image, before, F.get(images, 0)["fields"], event_time


class DebeziumFlatReader(JsonEventsReader):
    """The new-record-state form: the row's fields, ``__op``, ``__deleted``, ``__<source>``."""

    name: ClassVar[str] = "debezium_flat"
    description: ClassVar[str] = "Debezium's flattened new-record-state JSON, one event per line"
    image_paths: ClassVar[tuple[str, ...]] = ("$.payload", "$")

    def event_parts(
        self, table: TableConfig, text: Text, any_text: Callable[[str | None, ColumnConfig], Column]
    ) -> tuple[Column, dict[str, Column], dict[str, Column], Column, Column]:
        """Without ``__op`` (not added by the connector) an event is an upsert."""
        deleted = F.lower(text("__deleted")) == "true"
        # With a key, c and u both upsert; without one, c adds the row (a u would need its
        # before image).
        operation = F.when(deleted, F.lit("d")).otherwise(F.coalesce(text("__op"), F.lit("c")))
        image = {c.name: any_text(None, c) for c in table.columns}
        before = {c.name: F.lit(None).cast("string") for c in table.key_columns}
        event_time = F.coalesce(text("__source_ts_ms"), text("__ts_ms"))
        return operation, image, before, F.col(SCHEMA_FIELDS_COLUMN), event_time
