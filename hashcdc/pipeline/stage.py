"""The typecast-and-hash stage: one pass over a table's extract for one business date.

Called by the generated dbt Python model ``stg_<table>``. A business date flows one way:
the extract is found (:mod:`hashcdc.pipeline.extract`), checked and read as text by its
format's reader (:mod:`hashcdc.pipeline.inputs`), each configured column is cast to its
type with ``try_cast`` (:mod:`hashcdc.pipeline.casting`: a bad value never raises mid-job),
each row records why it cannot be loaded (``_row_errors``; with
``duplicates_keep_last_by`` also superseded duplicates), and ``keyhash`` and
``nonkeyhash`` are computed (:mod:`hashcdc.pipeline.hashing`). Change feeds take the event
path (:mod:`hashcdc.pipeline.feed`). All per-row work is native Spark.

The stage is not written: it is kept in the Spark session for the models after it
(:mod:`hashcdc.pipeline.session_stage`). Once it is computed,
:mod:`hashcdc.pipeline.checks` decides whether the run goes on, and
:mod:`hashcdc.pipeline.rejects` keeps the rejected rows in ``<table>_rejects``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.dates import parse_business_date
from hashcdc.pipeline.casting import (
    column_failed,
    column_message,
    typed_projection,
    typed_value,
    values_map,
)
from hashcdc.pipeline.columns import (
    BLOCK_START,
    CORRUPT_RECORD,
    EVENT_COLUMNS,
    RAW_LINE,
    RAW_VALUES,
    REJECT_DETAIL_COLUMNS,
    ROW_ERRORS,
    ROW_ID,
    SOURCE_FILE,
)
from hashcdc.pipeline.evolution.tables import evolve_tables, infer_additions, record_additions
from hashcdc.pipeline.evolution.upgrade import upgrade_states
from hashcdc.pipeline.extract import extract_files
from hashcdc.pipeline.feed import PriorState, typed_events
from hashcdc.pipeline.hashing import row_hashes, with_hashes
from hashcdc.pipeline.inputs import table_reader
from hashcdc.pipeline.projections import built_once, selected
from hashcdc.pipeline.transports import transport_of
from hashcdc.pipeline.transports.files import local_path
from hashcdc.state.plan import DateCommand, plan_of


def _typed_with_errors(raw: DataFrame, table: TableConfig) -> DataFrame:
    key = ("typed_with_errors", table.columns, table_reader(table).name)
    projections = built_once(key, lambda: _typed_with_errors_projections(table))
    typed = selected(raw, (key, "typed"), lambda: ["*", *projections[0]])
    return selected(typed, (key, "checked"), lambda: projections[1])


def _typed_with_errors_projections(table: TableConfig) -> tuple[list[Column], list[Column]]:
    """The typed values beside the raw ones, then the row's columns and why it fails."""
    projected, typed = typed_projection(
        {c.name: typed_value(F.col(c.name), c) for c in table.columns}
    )
    is_malformed = F.col(CORRUPT_RECORD).isNotNull()
    has_errors = is_malformed
    for column in table.columns:
        has_errors = has_errors | column_failed(F.col(column.name), typed[column.name], column)
    # Messages are built only for failing rows: a cheap flag guards the costly array.
    messages = F.array_compact(
        F.array(
            F.when(is_malformed, F.lit(table_reader(table).malformed_row)),
            *[column_message(F.col(c.name), typed[c.name], c) for c in table.columns],
        )
    )
    checked = [
        *[typed[c.name].alias(c.name) for c in table.columns],
        F.when(has_errors, messages).alias(ROW_ERRORS),
        F.when(has_errors, values_map(table)).alias(RAW_VALUES),
        F.col(CORRUPT_RECORD).alias(RAW_LINE),
        F.col(SOURCE_FILE),
        F.col(BLOCK_START),
        F.col(ROW_ID),
    ]
    return projected, checked


def _mark_superseded_duplicates(frame: DataFrame, table: TableConfig) -> DataFrame:
    """Reject all but the last row of each key, by ``duplicates_keep_last_by``.

    Rows that share the latest value cannot be told apart: all of them are rejected, so
    the key keeps its previous state rather than an arbitrary one of them.
    """
    order_by = F.col(str(table.duplicates_keep_last_by))
    accepted = F.col(ROW_ERRORS).isNull()
    per_key = Window.partitionBy("keyhash", accepted)
    latest = frame.withColumn("__latest", F.max(order_by).over(per_key))
    is_latest = order_by.eqNullSafe(F.col("__latest"))
    counted = latest.withColumn("__rows", F.count(F.lit(1)).over(per_key)).withColumn(
        "__latest_rows", F.sum(F.when(is_latest, 1).otherwise(0)).over(per_key)
    )
    name = table.duplicates_keep_last_by
    reason = F.when(~is_latest, F.lit(f"duplicate key: a row with a later '{name}' wins")).when(
        F.col("__latest_rows") > 1,
        F.lit(f"duplicate key: several rows share the latest '{name}'; none is taken"),
    )
    superseded = accepted & (F.col("__rows") > 1) & reason.isNotNull()
    return counted.select(
        *[c for c in frame.columns if c not in (ROW_ERRORS, RAW_VALUES)],
        F.when(superseded, F.array(reason)).otherwise(F.col(ROW_ERRORS)).alias(ROW_ERRORS),
        F.when(superseded, values_map(table)).otherwise(F.col(RAW_VALUES)).alias(RAW_VALUES),
    )


def state_table(schema: str | None, table: TableConfig) -> str | None:
    """The qualified name of a table's state model (None when the schema is unknown)."""
    return table.relations.in_schema(schema).state if schema else None


@dataclass(frozen=True)
class Screened:
    """What a table group's stage read of a member's extract, for all its members at once.

    ``files``: the date's (a micro-batch's) locations; ``sampled``: the fields of its
    reader's :meth:`~hashcdc.pipeline.inputs.base.Reader.column_sample` (None: it reads
    none); ``placeholders``: whether a change feed's events mention the unavailable-value
    placeholder (None: not looked at, the feed looks itself); ``lines``: the files' lines,
    read once for the sample, the placeholder's scan and the events (None: its reader's
    lines are not its events); ``checked``: the files were checked already (those of
    several members read by one plan, each checked against its own config).
    """

    files: list[str]
    sampled: list[str] | None = None
    placeholders: bool | None = None
    lines: DataFrame | None = None
    checked: bool = False


def typecast_and_hash(
    spark: SparkSession,
    table_data: dict[str, Any],
    business_date: Any,
    schema: str | None = None,
    prepare: bool = True,
    command: dict[str, Any] | None = None,
    prior: PriorState | None = None,
    screened: Screened | None = None,
) -> DataFrame:
    """Build the stage DataFrame of one table for one business date.

    Parameters
    ----------
    spark : SparkSession
        The active session.
    table_data : dict
        The table config as embedded by ``hashcdc generate`` (``TableConfig.to_dict``).
    business_date : str
        ``YYYY-MM-DD``.
    schema : str, optional
        The schema of the table's models: a change feed reads its previous state there.
    prepare : bool
        Upgrade the table's states, record inferred column additions and evolve the tables
        first (the stage model); False when the stage is computed again for a consumer
        (:func:`hashcdc.pipeline.session_stage.session_stage`), after its date's run prepared them.
    command : dict, optional
        What the command asks of the date (the ``date_command`` macro's dict,
        :class:`hashcdc.state.plan.DateCommand`; default: a daily run of the date). A
        change feed's events are new when the state the date's plan reads them against
        has not applied them (``prior_version``: on top of a micro-batch's earlier
        commits, else the date before); a micro-batch that lists files reads only those
        of the date's files (those the stream has not read before).
    prior : PriorState, optional
        A change feed's state before the date, when its plan is not its own state's (a
        member of a table group: :func:`hashcdc.pipeline.group_stage.group_stage`).
    screened : Screened, optional
        The extract's locations and what was read of them for all the members of a table
        group at once (its checks then read nothing more of their own).

    Returns
    -------
    DataFrame
        Configured columns (typed), ``keyhash``, ``nonkeyhash``, ``business_date``,
        ``_source_file`` and ``_row_errors`` (null when the row is fine).

    Raises
    ------
    InputDataError
        When no extract exists for the date.

    """
    table = TableConfig.from_dict(table_data)
    date = parse_business_date(business_date)
    inferred: list[str] = []
    if schema:
        if prepare:
            upgrade_states(spark, schema, table)
        table, inferred = infer_additions(spark, schema, table, date)
    if screened is None:
        files = checked_extract(spark, table, date, date_command(command, date))
    else:
        files = screened.files
        if not screened.checked:
            table_reader(table).check_extract(spark, table, files, date, screened.sampled)
    if schema and prepare:
        # Recorded before the column is added: a run killed in between knows it next time.
        record_additions(spark, schema, table, inferred, date)
        evolve_tables(spark, schema, table)
    # The columns the date's extract carries, with the types it is read with.
    read = table.as_read_on(date)
    if table.is_feed:
        if prior is None:
            state = state_table(schema, table)
            plan = plan_of(spark, state, date_command(command, date), table.name)
            prior = PriorState.at(spark, state, plan.prior_version)
        placeholders = screened.placeholders if screened is not None else None
        lines = screened.lines if screened is not None else None
        events = _event_stage(spark, read, files, prior, placeholders, lines)
        return _stage_columns(events, table, date)
    typed = _typed_with_errors(table_reader(read).read_rows(spark, read, files), read)
    hashed = with_hashes(typed, row_hashes(read))
    if table.duplicates_keep_last_by:
        hashed = _mark_superseded_duplicates(hashed, read)
    return _stage_columns(hashed, table, date)


def date_command(command: dict[str, Any] | None, business_date: str) -> DateCommand:
    """What the command asks of the date (the ``date_command`` macro's dict; none: a run)."""
    return DateCommand.from_dict({**(command or {}), "business_date": business_date})


def date_files(
    spark: SparkSession, table: TableConfig, business_date: str, asked: DateCommand | None = None
) -> list[str]:
    """The locations of a table's extract for a date, of a micro-batch's its own.

    ``asked``: a micro-batch names its files (local paths); of the date's, those (all when
    none of them is left).

    Raises
    ------
    InputDataError
        When there is no extract.

    """
    files = extract_files(spark, table, business_date)
    if asked is not None and asked.files is not None:
        files = transport_of(table).only(files, _local_paths(asked.files))
    return files


@functools.lru_cache(maxsize=4)
def _local_paths(files: tuple[str, ...]) -> frozenset[str]:
    """A micro-batch's files as local paths, once for the members of a group that share them."""
    return frozenset(local_path(f) for f in files)


def checked_extract(
    spark: SparkSession, table: TableConfig, business_date: str, asked: DateCommand | None = None
) -> list[str]:
    """The files of a table's extract for a date, once they are known to fit the config.

    They must exist and be text (CSV, JSON), and their header (CSV) or columns (parquet)
    must match the columns the date's extract carries; JSON events with fields the config
    lacks are reported. ``asked``: a micro-batch's command (:func:`date_files`).
    ``hashcdc check`` runs the same checks before a run.

    Raises
    ------
    InputDataError
        When there is no extract, or it has other columns than the config.

    """
    files = date_files(spark, table, business_date, asked)
    table_reader(table).check_extract(spark, table, files, business_date)
    return files


def _event_stage(
    spark: SparkSession,
    table: TableConfig,
    files: list[str],
    prior: PriorState,
    placeholders: bool | None = None,
    lines: DataFrame | None = None,
) -> DataFrame:
    """The events of a change feed, cast and hashed: one row per event (``pipeline.feed``)."""
    raw = table_reader(table).raw_events(spark, table, files, lines)
    return typed_events(raw, table, prior, placeholders)


def _stage_columns(hashed: DataFrame, table: TableConfig, date: str) -> DataFrame:
    """The stage's columns in order; the reject details are kept for rejected rows only.

    A column the date's extract does not carry is null; one read with its earlier type
    (before a widening) is cast to the configured one.
    """
    present = frozenset(hashed.columns)
    key = ("stage_columns", table.columns, tuple(row_hashes(table)), table.is_feed, present)
    before, after = built_once(key, lambda: _stage_projections(table, present))
    return selected(
        hashed,
        (key, date),
        lambda: [*before, F.lit(date).cast("date").alias("business_date"), *after],
    )


def _stage_projections(
    table: TableConfig, present: frozenset[str]
) -> tuple[list[Column | str], list[Column]]:
    """:func:`_stage_columns`' projection before and after its date."""
    rejected = F.col(ROW_ERRORS).isNotNull()
    before: list[Column | str] = [
        *[
            (F.col(c.name) if c.name in present else F.lit(None)).cast(c.type).alias(c.name)
            for c in table.columns
        ],
        *row_hashes(table),
        *(EVENT_COLUMNS if table.is_feed else ()),
    ]
    after = [
        F.col(SOURCE_FILE),
        F.col(ROW_ERRORS),
        *[F.when(rejected, F.col(name)).alias(name) for name in REJECT_DETAIL_COLUMNS],
    ]
    return before, after
