"""Checks of a stage that decide whether a business date's run goes on.

Called by the hashcdc adapter once ``stg_<table>`` is kept in the Spark session (the
generated model's ``validate`` hook; its first action computes and caches the stage),
before the state and history models run: rejected rows above the table's limits, keys
that occur twice, and (change feeds) conflicting events stop the run with a message
naming table, file, row, line and column, so the previous state is never touched; within
the limits, the counts are reported.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.config import TableConfig
from hashcdc.errors import InputDataError
from hashcdc.groups import outcomes
from hashcdc.groups.members import Group
from hashcdc.groups.slots import MEMBER_COLUMN
from hashcdc.pipeline.columns import ROW_ERRORS, SOURCE_FILE
from hashcdc.pipeline.feed import (
    PriorState,
    fail_on_conflicting_events,
    read_phase,
    report_skipped_events,
)
from hashcdc.pipeline.group_stage import member_rows
from hashcdc.pipeline.rejects import with_row_numbers
from hashcdc.pipeline.session_stage import StageCounts, record_counts
from hashcdc.pipeline.stage import date_command, state_table
from hashcdc.state.plan import member_plans, plan_of

MAX_REPORTED_ROWS = 10


def fail_on_duplicate_keys(table: TableConfig, date: str, written: DataFrame) -> None:
    """Refuse an extract in which a key occurs more than once, listing examples.

    Resolving duplicates silently would pick an arbitrary version of the row. The stage is
    partitioned by ``keyhash`` in the session, so this aggregation needs no shuffle.
    """
    repeated = written.groupBy("keyhash").count().where(F.col("count") > 1)
    repeated_count = repeated.count()
    if repeated_count == 0:
        return
    key_names = [c.name for c in table.key_columns]
    examples = (
        written.join(repeated.limit(MAX_REPORTED_ROWS), "keyhash")
        .groupBy(*key_names, "count")
        .agg(F.array_sort(F.collect_set(SOURCE_FILE)).alias("files"))
        .orderBy(*key_names)
        .collect()
    )
    lines = []
    for row in examples:
        key_text = ", ".join(f"{name}={row[name]!r}" for name in key_names)
        lines.append(f"  - {key_text}: {row['count']} rows (in {', '.join(row['files'])})")
    raise InputDataError(
        f"table '{table.name}', business date {date}: {repeated_count} key(s) occur more "
        "than once in the extract; nothing was written to the state or history.\n"
        + "\n".join(lines)
        + "\nDeliver an extract with one row per key and re-run the date."
    )


# How a stage's event times are kept as text (what a timestamp literal reads back exactly).
EVENT_TIME_TEXT = "yyyy-MM-dd HH:mm:ss.SSSSSS"


def validate_stage(dbt: Any, spark: SparkSession, written: DataFrame) -> None:
    """Fail the stage with a clear message when any row of the stage has errors.

    Parameters
    ----------
    dbt : Any
        dbt's Python model object (gives the table config and business date).
    spark : SparkSession
        The active session.
    written : DataFrame
        The stage as kept in the session (:func:`hashcdc.pipeline.session_stage.keep_stage`).

    Raises
    ------
    InputDataError
        Naming the table, the file, the row and column of each reported problem.

    """
    table = TableConfig.from_dict(dbt.config.meta_get("hashcdc_table"))
    date = dbt.business_date
    latest_event = earliest_event = F.lit(None).cast("string")
    if table.is_feed:
        new_event_time = F.when(
            F.col(ROW_ERRORS).isNull() & F.col("is_new_event"), F.col("event_time")
        )
        latest_event = F.date_format(F.max(new_event_time), EVENT_TIME_TEXT)
        earliest_event = F.date_format(F.min(new_event_time), EVENT_TIME_TEXT)
    counts = written.agg(
        F.count(F.lit(1)).alias("rows"),
        F.count(ROW_ERRORS).alias("rejected"),
        latest_event.alias("latest_event_at"),
        earliest_event.alias("earliest_event_at"),
    ).first()
    total, rejected = int(counts["rows"]), int(counts["rejected"])
    # Kept with the stage: the reconcile test and the run's audit read these counts.
    record_counts(
        f"{dbt.this.schema}.{dbt.this.identifier}",
        date,
        StageCounts(total, rejected, counts["latest_event_at"], counts["earliest_event_at"]),
    )
    if rejected:
        check_reject_limits(spark, table, date, written, rejected, total)
    loaded = written.where(F.col(ROW_ERRORS).isNull())
    if table.is_feed:
        fail_on_conflicting_events(table, date, loaded)
        # A micro-batch reads the date's files again: the events its earlier batches
        # applied are skipped by design, and a late one is reported by the run that closes
        # the date. Otherwise the events are checked against the date before.
        state = state_table(dbt.this.schema, table)
        command = date_command(dbt.command, date)
        plan = plan_of(spark, state, command, table.name)
        if not plan.micro_batch:
            prior = PriorState.at(spark, state, plan.before and plan.before.last_version)
            report_skipped_events(table, date, loaded, prior)
    elif not table.duplicates_keep_last_by:
        fail_on_duplicate_keys(table, date, loaded)


def _report_unapplied_events(
    spark: SparkSession, dbt: Any, group: Group, written: DataFrame, members: list[str]
) -> None:
    """A feed group's members' skipped events and tombstones, said as a table's are.

    A micro-batch reads its date's files again: the events its earlier batches applied
    are skipped by design, and a late one is reported by the run that closes the date.
    """
    date = dbt.business_date
    command = date_command(dbt.command, date)
    if not members or command.micro_batch:
        return
    state = group.relations.in_schema(dbt.this.schema).state
    plans = member_plans(spark, state, command, members)
    slot_map = group.stage_slot_map
    for member in group.members:
        if member.name in plans:
            before = plans[member.name].before
            prior = PriorState.at(spark, state, before and before.last_version, member.name)
            loaded = member_rows(written, member.name, slot_map)
            report_skipped_events(member, date, loaded.where(F.col(ROW_ERRORS).isNull()), prior)


def _members_repeating_keys(written: DataFrame, is_feed: bool) -> set[str]:
    """The members of a group's stage with a key twice (feeds: at one sequence), in one query."""
    keys = [MEMBER_COLUMN, "keyhash"]
    if is_feed:
        keys += ["event_sequence", read_phase(F.col("event_op")).alias("phase")]
    loaded = written.where(F.col(ROW_ERRORS).isNull() & F.col("keyhash").isNotNull())
    counted = loaded.groupBy(*keys)
    repeats = (
        counted.agg(F.count_distinct("event_id").alias("count")) if is_feed else counted.count()
    )
    return {
        row[MEMBER_COLUMN]
        for row in repeats.where(F.col("count") > 1).select(MEMBER_COLUMN).distinct().collect()
    }


def reject_limit_exceeded(table: TableConfig, rejected: int, total: int) -> str | None:
    """Which configured limit ``rejected`` of ``total`` rows exceeds, in words; or None."""
    if table.max_rejects is not None and rejected > table.max_rejects:
        return f"more than max_rejects ({table.max_rejects})"
    if rejected > total * table.max_reject_fraction:
        return f"more than max_reject_fraction ({table.max_reject_fraction:.1%} of the rows)"
    return None


def check_reject_limits(
    spark: SparkSession,
    table: TableConfig,
    date: str,
    written: DataFrame,
    rejected: int,
    total: int,
) -> None:
    """Stop the run when the rejects exceed the table's limits; otherwise say how many."""
    exceeded = reject_limit_exceeded(table, rejected, total)
    if exceeded is None:
        print(
            f"hashcdc: table '{table.name}', business date {date}: {rejected} of {total} "
            f"row(s) rejected, kept in {table.relations.rejects}; the rest is processed."
        )
        return
    examples = (
        with_row_numbers(spark, table, date, written.where(F.col(ROW_ERRORS).isNotNull()))
        .orderBy(SOURCE_FILE, "_row_number")
        .limit(MAX_REPORTED_ROWS)
        .collect()
    )
    lines = []
    for row in examples:
        where = f"{row[SOURCE_FILE]} row {row['_row_number']}"
        if row["_line_number"] is not None:
            where += f" (line {row['_line_number']})"
        lines.append(f"  - {where}: {'; '.join(row[ROW_ERRORS])}")
    raise InputDataError(
        f"table '{table.name}', business date {date}: {rejected} row(s) of the extract "
        f"cannot be loaded ({rejected / max(total, 1):.1%} of {total}), {exceeded} in "
        f"{table.config_file}; nothing was written to the state or history.\n"
        + "\n".join(lines)
        + f"\nFix the extract (or the column types in {table.config_file}) and re-run the "
        "date; raise the limit only if these rows may be quarantined."
    )


def validate_group_stage(dbt: Any, spark: SparkSession, written: DataFrame) -> None:
    """A table's checks for each member the group's date runs (one aggregation for the counts).

    A member that fails them is refused (:mod:`hashcdc.groups.outcomes`): the models after
    the stage leave its rows out, so its previous state stays as it was, and the others go
    on; a line names it and why.

    Raises
    ------
    InputDataError
        When every member the date runs is refused, naming each (nothing is written).

    """
    group = Group.from_dict(dbt.config.meta_get("hashcdc_table"))
    date = dbt.business_date
    # A feed's events a member had applied before (or tombstones), said once per member.
    unapplied = (
        F.count_if(F.col(ROW_ERRORS).isNull() & ~F.coalesce(F.col("is_new_event"), F.lit(False)))
        if group.is_feed
        else F.lit(0)
    )
    rows = (
        written.groupBy(MEMBER_COLUMN)
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.count(ROW_ERRORS).alias("rejected"),
            unapplied.alias("unapplied"),
        )
        .collect()
    )
    counted = {row[MEMBER_COLUMN]: (int(row["rows"]), int(row["rejected"])) for row in rows}
    _report_unapplied_events(
        spark, dbt, group, written, [r[MEMBER_COLUMN] for r in rows if r["unapplied"]]
    )
    total = sum(rows for rows, _ in counted.values())
    rejected = sum(rejects for _, rejects in counted.values())
    record_counts(
        f"{dbt.this.schema}.{dbt.this.identifier}", date, StageCounts(total, rejected, None)
    )
    # One aggregation finds the members with a key twice (a feed's: two different events
    # of a key at one position); only theirs are looked at.
    repeated = _members_repeating_keys(written, group.is_feed)
    slot_map = group.stage_slot_map
    run = outcomes.members_run(group.name, date, [m.name for m in group.enabled_members])
    for member in group.enabled_members:
        if member.name not in run:
            continue
        rows, rejects = counted.get(member.name, (0, 0))
        try:
            if rejects:
                own = member_rows(written, member.name, slot_map)
                check_reject_limits(spark, member, date, own, rejects, rows)
            if member.name in repeated and not member.duplicates_keep_last_by:
                loaded = member_rows(written, member.name, slot_map).where(
                    F.col(ROW_ERRORS).isNull()
                )
                if member.is_feed:
                    fail_on_conflicting_events(member, date, loaded)
                else:
                    fail_on_duplicate_keys(member, date, loaded)
        except InputDataError as refusal:
            outcomes.refuse(group.name, date, member.name, str(refusal))
    refused = outcomes.refused(group.name, date)
    if not outcomes.members_run(group.name, date, run):
        raise InputDataError("\n".join(refused.values()))
    for name, reason in refused.items():
        print(
            f"hashcdc: table '{name}' of group '{group.name}' is not applied on {date}; "
            f"its previous state is kept and the group's other tables go on:\n{reason}"
        )
