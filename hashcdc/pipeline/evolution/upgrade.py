"""Upgrade a warehouse written before the states were Delta tables (``hashcdc upgrade``).

Until issue 26 a state was a parquet table with one snapshot partition per business date.
Its latest snapshot becomes a Delta state in one commit that carries that date (so the
next date, a rerun or ``query --as-of`` find it in the log): the live rows (I, U, N, X)
keep their columns, operation and dates; a change feed's W and A rows are kept; the W row
records the date's operation counts, as the new states do. The copy is made beside the
table, then swapped in under its name with the same crash-safe rename sequence as a
schema rewrite (:func:`hashcdc.pipeline.evolution.tables._finish_rewrite` completes a
swap a killed run left half-way).

Until issue 42 a history was a parquet table partitioned by ``business_date``, and until
issue 41 the rejects and changelog tables were too; each becomes a Delta table
(:func:`upgrade_dated_table`) with the same rows and partitioning, by the same copy and
swap, so a rerun replaces a date's rows in one commit that readers see whole, and a
date's rows are found from the table's log, not from the metastore's partitions (whose
filter by date Hive's fallback path cannot serve: issue 41).

Until issue 42 timestamps were written as parquet's INT96 (Spark's default), which other
readers get wrong for dates far from today (delta-rs and pyarrow wrap them around, polars
clamps them): :func:`rewrite_int96` rewrites a table's live files that hold INT96 as INT64
microseconds, once, and records it (``hashcdc.parquet_timestamps``) so later runs skip
the check. It runs after the conversions above, so every table it meets is Delta: it is
rewritten in one commit that changes no row (its versions are kept).

Runs by itself before a table's first date on the new layout (the stage calls
:func:`upgrade_states`), or for every table with ``hashcdc upgrade``.
"""

from __future__ import annotations

import sys
from typing import Any

from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.dates import partition_dates
from hashcdc.pipeline.evolution.tables import (
    RETIRED_SUFFIX,
    REWRITE_SUFFIX,
    persisted_tables,
)
from hashcdc.pipeline.hashing import HASH_ALGORITHM_VERSION
from hashcdc.relations import Relations
from hashcdc.state.versions import (
    MICROS,
    TIMESTAMPS_PROPERTY,
    UNTOUCHED_PROPERTY,
    commit_metadata_statement,
    history_properties,
    is_delta,
    own_properties,
    state_properties,
    table_properties,
    untouched_operation,
)

LIVE_OPERATIONS = ("I", "U", "N", "X")
# The latest snapshot of a parquet state being upgraded (a temporary view of the session).
SNAPSHOT_VIEW = "hashcdc_upgraded_snapshot"


def state_tables(schema: str, table: TableConfig) -> list[str]:
    """The state tables of a table config (main, and sensitive when it has such columns)."""
    relations = table.relations.in_schema(schema)
    return [relations.state, *([relations.sensitive_state] if table.sensitive_columns else [])]


def dated_tables(schema: str, table: TableConfig) -> list[str]:
    """The tables of dated rows of a table config, one partition per business date.

    Its histories (main, and sensitive when it has such columns), its rejects, and its
    changelog when it keeps one.
    """
    relations = table.relations.in_schema(schema)
    return [
        relations.history,
        *([relations.sensitive_history] if table.sensitive_columns else []),
        relations.rejects,
        *([relations.changelog] if table.changelog else []),
    ]


def stored_tables(schema: str, table: TableConfig) -> list[str]:
    """The tables a table's rows are stored in (what ``hashcdc compact`` compacts).

    Its states and dated tables; a group member's, its group's state, history and rejects
    (shared with its siblings), and its sensitive state and history when it has such columns.
    """
    if table.group is not None:
        relations = Relations(table.group).in_schema(schema)
        sensitive = [relations.sensitive_state, relations.sensitive_history]
        return [
            relations.state,
            relations.history,
            relations.rejects,
            *(sensitive if table.sensitive_columns else []),
        ]
    return state_tables(schema, table) + dated_tables(schema, table)


def _swap_in_delta_copy(
    spark: Any, table: str, clauses: str, select: str, business_date: str | None
) -> None:
    """Write a Delta copy of a table beside it, its commit tagged with the date.

    The copy is then swapped in under the table's name by the crash-safe renames of a
    schema rewrite.
    """
    copy, retired = table + REWRITE_SUFFIX, table + RETIRED_SUFFIX
    spark.sql(f"drop table if exists {copy}")
    spark.sql(commit_metadata_statement(business_date))
    try:
        spark.sql(f"create table {copy} using delta {clauses} as {select}")
    finally:
        spark.sql(commit_metadata_statement(None))
    spark.sql(f"alter table {table} rename to {retired}")
    spark.sql(f"alter table {copy} rename to {table}")
    spark.sql(f"drop table {retired}")


def _counts_expression() -> str:
    """The W row's counts, from the operations of the latest snapshot's rows."""
    counted = ", ".join(f"'{op}', count_if(operation = '{op}')" for op in ("I", "U", "D", "X", "N"))
    before = "count_if(operation in ('U', 'N', 'D', 'X'))"
    return f"map({counted}, 'state_rows_before', {before})"


def upgrade_state(spark: Any, state: str) -> str | None:
    """Convert one parquet state to a Delta state; returns the date it holds.

    None when there is nothing to do: the table is missing or already a Delta table.
    """
    if not spark.catalog.tableExists(state) or is_delta(spark, state):
        return None
    dates = partition_dates(spark, state)
    if not dates:
        return None
    latest = dates[-1]
    # The latest snapshot's files are read from its partition's folder, not through a date
    # filter sent to the metastore: Hive's fallback path (JDO) serves none (issue 41).
    described = spark.sql(
        f"describe table extended {state} partition (business_date = '{latest}')"
    ).collect()
    # The partition's Location comes first; the table's own follows under "Storage".
    location = next(row[1] for row in described if row[0] == "Location")
    files = spark.read.parquet(location)
    # Spark may infer the folder's business_date (as a partition of the path) or not.
    files.withColumn("business_date", F.lit(latest).cast("date")).createOrReplaceTempView(
        SNAPSHOT_VIEW
    )
    snapshot = SNAPSHOT_VIEW
    names = [f.name for f in spark.table(state).schema.fields]
    columns = ", ".join(f"`{name}`" for name in names)
    watermark_values = ", ".join(
        "'W'" if name == "operation" else f"date'{latest}'" if name == "business_date" else "null"
        for name in names
    )
    counts = _counts_expression()
    is_feed = "event_sequence" in names
    bookkeeping = (
        f"select {columns}, if(operation = 'W', (select {counts} from {snapshot}), null) "
        f"from {snapshot} where operation in ('W', 'A')"
        if is_feed
        else f"select {watermark_values}, (select {counts} from {snapshot})"
    )
    select = (
        f"select {columns}, cast(null as map<string, bigint>) as operation_counts "
        f"from {snapshot} where operation in {LIVE_OPERATIONS} union all {bookkeeping}"
    )
    properties = own_properties(spark, state) | state_properties(HASH_ALGORITHM_VERSION)
    listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    try:
        _swap_in_delta_copy(spark, state, f"tblproperties ({listed})", select, latest)
    finally:
        spark.catalog.dropTempView(SNAPSHOT_VIEW)
    return latest


def upgrade_dated_table(spark: Any, table: str) -> bool:
    """Convert one parquet table of dated rows to a Delta table; returns whether it did.

    Every row is kept, in a Delta table partitioned by ``business_date`` whose first
    commit carries the latest date (it holds every date up to it); the copy is written
    with INT64 timestamps. Nothing to do when the table is missing or already Delta.
    """
    if not spark.catalog.tableExists(table) or is_delta(spark, table):
        return False
    dates = partition_dates(spark, table)
    latest = dates[-1] if dates else None
    properties = own_properties(spark, table) | history_properties()
    listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    clauses = f"partitioned by (business_date) tblproperties ({listed})"
    _swap_in_delta_copy(spark, table, clauses, f"select * from {table}", latest)
    return True


def _is_int96(spark: Any, path: str) -> bool:
    """Whether a parquet file holds a column of the INT96 type (read from its footer)."""
    jvm = spark._jvm  # noqa: SLF001 - parquet's footer reader, no Python equivalent here
    conf = spark._jsc.hadoopConfiguration()  # noqa: SLF001
    source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
        jvm.org.apache.hadoop.fs.Path(path), conf
    )
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)
    try:
        schema = str(reader.getFooter().getFileMetaData().getSchema().toString())
    finally:
        reader.close()
    return " int96 " in schema


def rewrite_int96(spark: Any, table: str) -> bool:
    """Rewrite a Delta table whose live files hold INT96 timestamps; returns whether it did.

    Done once: the table is then marked ``hashcdc.parquet_timestamps = micros`` (as new
    states are from their creation), and the check is a property lookup after that.
    """
    if not spark.catalog.tableExists(table):
        return False
    if table_properties(spark, table).get(TIMESTAMPS_PROPERTY) == MICROS:
        return False
    frame = spark.table(table)
    found = "timestamp" in frame.schema.simpleString() and any(
        _is_int96(spark, path) for path in frame.inputFiles()
    )
    if found:
        location = spark.sql(f"describe detail {table}").collect()[0]["location"]
        spark.sql(commit_metadata_statement(None))
        # One commit that changes no row (dataChange false, as a compaction): the table's
        # versions, their dates and time travel are kept.
        frame.write.format("delta").mode("overwrite").option("dataChange", "false").save(location)
    spark.sql(f"alter table {table} set tblproperties ('{TIMESTAMPS_PROPERTY}' = '{MICROS}')")
    return found


def upgrade_states(spark: Any, schema: str, table: TableConfig) -> list[str]:
    """Upgrade a table's tables, saying so in one line each; returns their names.

    A parquet state becomes a Delta state (:func:`upgrade_state`), a parquet history,
    rejects or changelog a Delta table (:func:`upgrade_dated_table`); every table whose
    files hold INT96 timestamps is rewritten with INT64 ones (:func:`rewrite_int96`).
    """
    upgraded = []
    for state in state_tables(schema, table):
        latest = upgrade_state(spark, state)
        if latest is not None:
            upgraded.append(state)
            print(
                f"hashcdc: table '{table.name}': {state} upgraded to a Delta table holding "
                f"{latest} (its latest snapshot)",
                file=sys.stdout,
                flush=True,
            )
    for dated in dated_tables(schema, table):
        if upgrade_dated_table(spark, dated):
            upgraded.append(dated)
            print(
                f"hashcdc: table '{table.name}': {dated} upgraded to a Delta table "
                "(every date's rows kept; INT64 timestamps)",
                file=sys.stdout,
                flush=True,
            )
    for state in state_tables(schema, table):
        # States of an earlier release: the rule of their current view, for other readers.
        wanted = {UNTOUCHED_PROPERTY: untouched_operation(table.extract_type)}
        if (
            spark.catalog.tableExists(state)
            and not wanted.items() <= table_properties(spark, state).items()
        ):
            spark.sql(f"alter table {state} set tblproperties ('{UNTOUCHED_PROPERTY}' = "
                      f"'{wanted[UNTOUCHED_PROPERTY]}')")  # fmt: skip
    for persisted in persisted_tables(schema, table):
        if rewrite_int96(spark, persisted.name):
            upgraded.append(persisted.name)
            print(
                f"hashcdc: table '{table.name}': {persisted.name} rewritten with INT64 "
                "timestamps (its INT96 ones read wrong in other engines; rows and versions "
                "kept)",
                file=sys.stdout,
                flush=True,
            )
    return upgraded
