"""``hashcdc compact``: compaction and retention of the states and histories (Delta Lake).

A date's MERGE adds a few small files and deletion vectors; reads stay fast for many
dates (docs/performance.md), and compaction rewrites them into large files: ``OPTIMIZE``,
one commit that changes no row, so time travel and reruns are unaffected. Retention then
removes the files no kept version needs: the versions of the latest
``hashcdc_state_dates_kept`` dates (dbt_project.yml) stay readable and restorable
(a rerun of the latest date restores the one before it), older ones are ``VACUUM``-ed. The
oldest date kept is recorded as the table property ``hashcdc.kept_since``.

By policy, the state model compacts itself after a date's commit once
``hashcdc_compact_every_dates`` dates (dbt_project.yml) have been applied since its last
``OPTIMIZE`` (:func:`compact_if_due`, called by the state's post-hook through the adapter),
so ``hashcdc run`` and ``dbt build`` alike keep reads fast without a separate schedule.
Delta's ``OPTIMIZE`` commits nothing when the table is already compact (one file or none
per partition); such a compaction still counts, so the table records it as a commit that
sets the property ``hashcdc.compacted_through`` (the version found compact).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from hashcdc.state.versions import (
    DELETION_VECTORS_PROPERTY,
    KEPT_SINCE_PROPERTY,
    applied_versions,
    commit_date,
    effective_commits,
    group_members,
    is_delta,
    json_object,
    member_applied_versions,
    table_history,
    table_properties,
    table_size,
)

RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
COMPACTED_THROUGH_PROPERTY = "hashcdc.compacted_through"


@dataclass(frozen=True)
class Compacted:
    """What compaction did to one state table."""

    table: str
    files_removed: int
    files_added: int
    kept_since: str | None

    def summary(self) -> str:
        """One line for the terminal and dbt's log."""
        kept = f"; dates before {self.kept_since} no longer kept" if self.kept_since else ""
        return f"{self.table}: {self.files_removed} file(s) compacted into {self.files_added}{kept}"


def _commit_times(spark: Any, table: str) -> dict[int, dt.datetime]:
    rows = spark.sql(f"describe history {table}").select("version", "timestamp").collect()
    return {int(row["version"]): row["timestamp"] for row in rows}


def _oldest_kept(spark: Any, table: str, kept_dates: int) -> tuple[int, str] | None:
    """The oldest version and date the latest ``kept_dates`` dates need (None: all kept).

    A table group's state: each member keeps its own latest dates (a member rerun or
    replayed alone has versions its siblings do not), so the version is the oldest any
    member needs and the date the latest of the members' oldest kept ones: a date before
    it may have lost a member's files, and none is read after it.
    """
    members = group_members(table_properties(spark, table))
    if not members:
        applied = applied_versions(spark, table)
        if len(applied) <= kept_dates:
            return None
        return applied[-kept_dates].version, applied[-kept_dates].business_date
    by_member = [a for a in member_applied_versions(spark, table, members).values() if a]
    cut = [applied[-kept_dates] for applied in by_member if len(applied) > kept_dates]
    if not cut:
        return None
    needed = [
        applied[-kept_dates] if len(applied) > kept_dates else applied[0] for applied in by_member
    ]
    return min(a.version for a in needed), max(a.business_date for a in cut)


def retain(spark: Any, table: str, kept_dates: int) -> str | None:
    """Remove the files only versions older than the latest ``kept_dates`` dates need.

    Returns the oldest date kept (None when the table holds no more dates than that).
    """
    oldest_kept = _oldest_kept(spark, table, kept_dates)
    if oldest_kept is None:
        return None
    oldest_version, oldest_date = oldest_kept
    committed = _commit_times(spark, table)[oldest_version]
    now = dt.datetime.now(committed.tzinfo) if committed.tzinfo else dt.datetime.now()
    # Whole hours, one more than needed: a file the oldest kept version reads is kept.
    hours = max(0, math.ceil((now - committed).total_seconds() / 3600) + 1)
    previous = spark.conf.get(RETENTION_CHECK, "true")
    spark.conf.set(RETENTION_CHECK, "false")
    try:
        spark.sql(f"vacuum {table} retain {hours} hours").collect()
    finally:
        spark.conf.set(RETENTION_CHECK, previous)
    spark.sql(f"alter table {table} set tblproperties ('{KEPT_SINCE_PROPERTY}' = '{oldest_date}')")
    return oldest_date


def compact(spark: Any, table: str, kept_dates: int) -> Compacted | None:
    """OPTIMIZE a state, then apply retention; None when the table is not a Delta state."""
    if not spark.catalog.tableExists(table) or not is_delta(spark, table):
        return None
    [result] = spark.sql(f"optimize {table}").collect()
    metrics = result["metrics"]
    files_removed = int(metrics["numFilesRemoved"])
    if files_removed == 0:
        _record_already_compact(spark, table)
    kept_since = retain(spark, table, kept_dates)
    return Compacted(table, files_removed, int(metrics["numFilesAdded"]), kept_since)


def _record_already_compact(spark: Any, table: str) -> None:
    """Commit the compaction ``OPTIMIZE`` found nothing to do for, so that it counts."""
    [latest] = spark.sql(f"describe history {table} limit 1").select("version").collect()
    spark.sql(
        f"alter table {table} set tblproperties "
        f"('{COMPACTED_THROUGH_PROPERTY}' = '{int(latest['version'])}')"
    )


def is_compaction(commit: dict[str, Any]) -> bool:
    """Whether a commit (a ``describe history`` row) compacted the table.

    An ``OPTIMIZE`` did, and so did the record of one that found nothing to do.
    """
    if commit.get("operation") == "OPTIMIZE":
        return True
    if commit.get("operation") != "SET TBLPROPERTIES":
        return False
    properties = json_object((commit.get("operationParameters") or {}).get("properties"))
    return COMPACTED_THROUGH_PROPERTY in properties


def dates_since_compaction(history: list[dict[str, Any]]) -> int:
    """Dates applied after the latest compaction the table still holds.

    A compaction a ``RESTORE`` undid does not count (``describe history`` rows, any order).
    """
    dates = 0
    for commit in reversed(effective_commits(history)):
        if is_compaction(commit):
            break
        dates += commit_date(commit) is not None
    return dates


def compact_if_due(spark: Any, table: str, every_dates: int, kept_dates: int) -> Compacted | None:
    """Compact ``table`` when ``every_dates`` (> 0) dates were applied since its last one."""
    if every_dates <= 0 or not spark.catalog.tableExists(table):
        return None
    history = table_history(spark, table)
    if history is None or dates_since_compaction(history) < every_dates:
        return None
    return compact(spark, table, kept_dates)


MIB = 1024 * 1024


def deletion_vectors_due(size_bytes: int, from_mib: float, enabled: bool) -> bool:
    """Whether a state of ``size_bytes`` should switch deletion vectors on now."""
    return not enabled and size_bytes >= from_mib * MIB


def deletion_vectors_by_size(spark: Any, table: str, from_mib: float) -> str | None:
    """Switch a state's deletion vectors on once it holds ``from_mib`` MiB of data.

    One ``ALTER TABLE`` commit after the date's own, so it belongs to that date's versions
    (a rerun of the date restores the state from before it and switches them on again).
    Never off again: a state only grows past the size that made them pay. Returns the
    line for the log, or None when nothing was done.
    """
    if from_mib < 0 or not spark.catalog.tableExists(table):
        return None
    if table_properties(spark, table).get(DELETION_VECTORS_PROPERTY, "false") == "true":
        return None
    size = table_size(spark, table)
    if size is None or not deletion_vectors_due(size, from_mib, enabled=False):
        return None
    spark.sql(f"alter table {table} set tblproperties ('{DELETION_VECTORS_PROPERTY}' = 'true')")
    return (
        f"{table}: {size / MIB:.1f} MiB, deletion vectors switched on from the next date "
        "(var hashcdc_deletion_vectors_from_mib)"
    )
