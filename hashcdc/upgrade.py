"""Upgrade a warehouse written before the states were Delta tables (``hashcdc upgrade``).

Until issue 26 a state was a parquet table with one snapshot partition per business date.
Its latest snapshot becomes a Delta state in one commit that carries that date (so the
next date, a rerun or ``query --as-of`` find it in the log): the live rows (I, U, N, X)
keep their columns, operation and dates; a change feed's W and A rows are kept; the W row
records the date's operation counts, as the new states do. The copy is made beside the
table, then swapped in under its name with the same crash-safe rename sequence as a
schema rewrite (:func:`hashcdc.evolve._finish_rewrite` completes a swap a killed run left
half-way). History, rejects and changelog tables keep their layout: nothing to convert.

Runs by itself before a table's first date on the new layout (the stage calls
:func:`upgrade_states`), or for every table with ``hashcdc upgrade``.
"""

from __future__ import annotations

import sys
from typing import Any

from hashcdc.config import TableConfig
from hashcdc.dates import partition_dates
from hashcdc.evolve import RETIRED_SUFFIX, REWRITE_SUFFIX, own_properties
from hashcdc.hashing import HASH_ALGORITHM_VERSION
from hashcdc.versions import commit_metadata_statement, is_delta, state_properties

LIVE_OPERATIONS = ("I", "U", "N", "X")


def state_tables(schema: str, table: TableConfig) -> list[str]:
    """The state tables of a table config (main, and sensitive when it has such columns)."""
    relations = table.relations.in_schema(schema)
    names = [relations.state]
    if table.sensitive_columns:
        names.append(relations.sensitive_state)
    return names


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
    snapshot = f"(select * from {state} where business_date = date'{latest}')"
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
    copy, retired = state + REWRITE_SUFFIX, state + RETIRED_SUFFIX
    spark.sql(f"drop table if exists {copy}")
    spark.sql(commit_metadata_statement(latest))
    try:
        spark.sql(f"create table {copy} using delta tblproperties ({listed}) as {select}")
    finally:
        spark.sql(commit_metadata_statement(None))
    spark.sql(f"alter table {state} rename to {retired}")
    spark.sql(f"alter table {copy} rename to {state}")
    spark.sql(f"drop table {retired}")
    return latest


def upgrade_states(spark: Any, schema: str, table: TableConfig) -> list[str]:
    """Upgrade a table's parquet states, saying so in one line each; returns their names."""
    upgraded = []
    for state in state_tables(schema, table):
        latest = upgrade_state(spark, state)
        if latest is not None:
            upgraded.append(state)
            print(
                f"hashcdc: table '{table.name}': {state} upgraded to a Delta table holding "
                f"{latest} (its latest snapshot; history kept as it was)",
                file=sys.stdout,
                flush=True,
            )
    return upgraded
