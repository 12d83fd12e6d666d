"""The stage of a business date, kept in the Spark session instead of written as a table.

The generated model ``stg_<table>`` (materialization ``session_stage`` of the hashcdc
adapter) computes the typed, hashed extract once, partitions it by ``keyhash``, caches it
(memory, spilling to local disk) and registers it as a global temporary view (read by the
sessions of all of dbt's threads: hashcdc.runtime.sessions). The models and tests
after it in the same dbt invocation — the state's diff and MERGE, the rejects, the
reconcile test, the run's audit row — read that view: the extract is read, cast and
hashed once, and nothing but the changes is written to the warehouse.

A command that runs a consumer without its stage (``dbt test`` alone, ``dbt run --select
<table>_state``, a later ``dbt`` invocation in the same process for another date) finds no
view for the date and computes the stage again from the extract, without its side effects
(upgrades, recorded column additions): :func:`session_stage` is the one way to the stage.

One view per stage relation and business date. A later ``dbt test`` in the same process
reads it; the next invocation that runs a stage model releases every stage kept before it
(the next date's run, another table's), so a long process (``hashcdc run`` of several
dates, the bench, the test suite) holds only the stages of one invocation. A stage its
checks refused is released at once.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from hashcdc.dates import parse_business_date
from hashcdc.groups.members import is_group_data
from hashcdc.pipeline.group_stage import group_stage
from hashcdc.pipeline.stage import typecast_and_hash
from hashcdc.relations import Relations

# Spark's default for a DataFrame's cache: columnar batches in memory, spilled to the local
# disk when the storage memory is short (never recomputed, never lost).
STAGE_STORAGE = StorageLevel.MEMORY_AND_DISK_DESER
VIEW_PREFIX = "hashcdc_stage"
# Spark's database of global temporary views (``spark.sql.globalTempDatabase``, a static
# setting hashcdc leaves at its default): a stage is read by the sessions of all of dbt's
# threads (hashcdc.runtime.sessions), a session's own temporary views by itself only.
SHARED_VIEWS = "global_temp"


@dataclass(frozen=True)
class StageCounts:
    """A kept stage's rows as its checks counted them, for the consumers that report them.

    ``latest_event_at``: a change feed's latest commit time among its new loaded events, as
    a ``yyyy-MM-dd HH:mm:ss.SSSSSS`` text in the session's time zone (what a timestamp
    literal of the same session reads back exactly); None for other tables, or when there
    is none. ``earliest_event_at``: the earliest, the same way (the batch's oldest event:
    its lag is the batch's worst).
    """

    rows: int
    rejected: int
    latest_event_at: str | None = None
    earliest_event_at: str | None = None


@dataclass
class _KeptStage:
    view: str
    # The persisted DataFrame (the view reads its cache: _cached_leaf).
    cached: DataFrame
    invocation: str | None
    # Set by the stage's checks (record_counts): the reconcile test and the audit read
    # them instead of counting the stage again.
    counts: StageCounts | None = None


_kept: dict[str, _KeptStage] = {}
_kept_lock = threading.Lock()


def view_name(relation: str, business_date: str) -> str:
    """The global temporary view holding a stage relation's rows for one business date."""
    return f"{SHARED_VIEWS}.{_bare_view_name(relation, business_date)}"


def _bare_view_name(relation: str, business_date: str) -> str:
    relation_part = re.sub(r"[^0-9a-zA-Z]+", "__", relation.replace("`", "")).strip("_")
    return f"{VIEW_PREFIX}__{relation_part}__{business_date.replace('-', '')}".lower()


def _same_spark(one: SparkSession, other: SparkSession) -> bool:
    """Whether two sessions share a Spark context (and so their caches and global views)."""
    return one.sparkContext is other.sparkContext


def _relation_key(relation: str) -> str:
    return relation.replace("`", "").lower()


def keep_stage(
    spark: SparkSession,
    frame: DataFrame,
    relation: str,
    business_date: str,
    partitions: int | None = None,
    invocation: str | None = None,
    group: bool = False,
) -> DataFrame:
    """Keep a stage in the session for a date: partitioned by ``keyhash``, cached, a view.

    Parameters
    ----------
    spark : SparkSession
        The active session.
    frame : DataFrame
        The stage as :func:`hashcdc.pipeline.stage.typecast_and_hash` builds it (not yet computed).
    relation : str
        The stage model's relation (``schema.stg_<table>``): the name consumers ref.
    business_date : str
        ``YYYY-MM-DD``.
    partitions : int, optional
        Partitions by ``keyhash`` (the table's ``buckets``); default: the session's
        ``spark.sql.shuffle.partitions``, so joins on ``keyhash`` move only the other side.
    invocation : str, optional
        dbt's ``invocation_id`` of the stage model's run: the stages kept by any other
        invocation are released (None: a stage computed again for a consumer).
    group : bool
        A table group's stage: not partitioned by ``keyhash`` (its consumers join on
        ``table_name`` and ``keyhash``, which shuffles the stage either way) but coalesced
        to the session's parallelism. Its plan is a union of a branch per member, a task
        per file, and each task deserializes every member's branch: 100 members' stage
        took 33 s to compute and cache repartitioned, 10 s coalesced (docs/performance.md).
        Its cache is of a leaf over its rows (:func:`_rows_leaf`), not of that plan.

    Returns
    -------
    DataFrame
        The view's DataFrame (:func:`_cached_leaf`). It is computed and cached by its first
        action (the stage's checks).

    """
    date = parse_business_date(business_date)
    count = int(partitions or spark.conf.get("spark.sql.shuffle.partitions"))
    view = view_name(relation, date)
    with _kept_lock:
        # Released first: a rerun's stage has the plan of the one it replaces (the same
        # files), and Spark would serve it that cache, read before the files changed.
        for key, other in list(_kept.items()):
            if key == _relation_key(relation) or (invocation and other.invocation != invocation):
                _release(spark, key)
        shaped = (
            _rows_leaf(spark, frame.coalesce(spark.sparkContext.defaultParallelism))
            if group
            else frame.repartition(count, "keyhash")
        )
        cached = shaped.persist(STAGE_STORAGE)
        kept = _cached_leaf(spark, cached)
        kept.createOrReplaceGlobalTempView(_bare_view_name(relation, date))
        _kept[_relation_key(relation)] = _KeptStage(view, cached, invocation)
    return spark.table(view)


def _release(spark: SparkSession, key: str) -> None:
    previous = _kept.pop(key, None)
    # A stage of a session since stopped went with it (its cache and view).
    if previous is None or not _same_spark(previous.cached.sparkSession, spark):
        return
    spark.catalog.dropGlobalTempView(previous.view.rsplit(".", 1)[1])
    previous.cached.unpersist()


def _cached_leaf(spark: SparkSession, cached: DataFrame) -> DataFrame:
    """A cached DataFrame whose plan is its cache alone, not the extract's lineage.

    A consumer refers to the stage several times (a change feed's state query about
    eight), and Spark analyses each reference's lineage and compares it with the cached
    plans before it reads the cache: with the lineage, that feed's query spent about 3 s
    planning on a 1,000-row table; with the cache as the plan's one leaf (Spark's
    ``InMemoryRelation``, the node a cached plan is replaced with), 0.7 s. The leaf keeps
    what the cache gives: columnar batches in memory or on disk, lost blocks computed
    again from the lineage, the stage's partitioning by ``keyhash``. Spark has no public
    call for it; where the internal one is missing (another Spark version), the cached
    DataFrame itself.
    """
    try:
        session = spark._jsparkSession  # noqa: SLF001 - the JVM session, no public handle
        entry = session.sharedState().cacheManager().lookupCachedData(cached._jdf)  # noqa: SLF001
        relation = entry.get().cachedRepresentation()
        leaf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(session, relation)  # noqa: SLF001
    except Exception:  # noqa: BLE001 - py4j's (or a Connect session's) errors vary
        return cached
    return DataFrame(leaf, spark)


def _rows_leaf(spark: SparkSession, frame: DataFrame) -> DataFrame:
    """A group's stage as a leaf over its rows, so that its cache's plan is that leaf.

    Spark describes a cached plan inside every query that reads the cache: the plan info
    its listeners get (with or without a UI) and the explain text are built at each
    query's start and adaptive re-plan, the cached plan with them. A group's stage is a
    branch per member, and the state's MERGE reads it about eight times: 100 members'
    micro-batch (100,000 events) took 20–31 s to compute and cache, a query that reads
    it four times 7.6–9.5 s; over the leaf, 11–12 s and 3.4–4.2 s (docs/performance.md).
    The rows are the same lineage's (a lost block of the cache is computed from it
    again); the leaf has no partitioning to keep (a group's stage is coalesced). Spark
    has no public call for it; where the internal one is missing, the frame itself.
    """
    try:
        session = spark._jsparkSession  # noqa: SLF001 - the JVM session, no public handle
        rows = frame._jdf.queryExecution().toRdd()  # noqa: SLF001
        leaf = session.internalCreateDataFrame(rows, frame._jdf.schema(), False)  # noqa: SLF001
    except Exception:  # noqa: BLE001 - py4j's (or a Connect session's) errors vary
        return frame
    return DataFrame(leaf, spark)


def record_counts(relation: str, business_date: str, counts: StageCounts) -> None:
    """Keep what a stage's checks counted with the stage (nothing when it is not kept)."""
    view = view_name(relation, parse_business_date(business_date))
    with _kept_lock:
        kept = _kept.get(_relation_key(relation))
        if kept is not None and kept.view == view:
            kept.counts = counts


def kept_counts(spark: SparkSession, relation: str, business_date: str) -> StageCounts | None:
    """The counts of the stage this session keeps for a date, when its checks made them.

    None when the stage is not kept (a consumer run without its stage model computes the
    stage again, and counts it itself) or was kept for another date.
    """
    view = view_name(relation, parse_business_date(business_date))
    with _kept_lock:
        kept = _kept.get(_relation_key(relation))
    if kept is None or kept.view != view or not _same_spark(kept.cached.sparkSession, spark):
        return None
    return kept.counts


def release_stage(spark: SparkSession, relation: str) -> None:
    """Drop a kept stage (its cache and view): one its checks refused is not read again."""
    with _kept_lock:
        _release(spark, _relation_key(relation))


def session_stage(
    spark: SparkSession,
    relation: str,
    table_data: dict[str, Any],
    business_date: str,
    partitions: int | None = None,
) -> str:
    """The view of a stage for a date; computed from the extract when the session lacks it.

    Parameters
    ----------
    spark : SparkSession
        The active session.
    relation : str
        The stage model's relation (``schema.stg_<table>``).
    table_data : dict
        The table config as embedded by ``hashcdc generate`` in the stage model's meta.
    business_date : str
        ``YYYY-MM-DD``.
    partitions : int, optional
        As for :func:`keep_stage`.

    Returns
    -------
    str
        The name of the global temporary view.

    """
    date = parse_business_date(business_date)
    view = view_name(relation, date)
    with _kept_lock:
        kept = _kept.get(_relation_key(relation))
    if (
        kept is not None
        and kept.view == view
        and _same_spark(kept.cached.sparkSession, spark)
        and spark.catalog.tableExists(view)
    ):
        return view
    schema = relation.replace("`", "").rsplit(".", 1)[0] if "." in relation else None
    group = is_group_data(table_data)
    if group:
        frame = group_stage(spark, table_data, date)
    else:
        frame = typecast_and_hash(spark, table_data, date, schema=schema, prepare=False)
    keep_stage(spark, frame, relation, date, partitions, group=group)
    return view


def relation_reader(
    spark: SparkSession, table_data: dict[str, Any] | None, schema: str, business_date: str
) -> Any:
    """The function a Python model's ``dbt.ref`` reads relations with.

    The model's own table's stage (``schema.stg_<table>``) is read from the session
    (:func:`session_stage`, of ``business_date``); any other relation from the catalog.
    """
    name = (table_data.get("group") or table_data.get("name")) if table_data else None
    stage = Relations(name, schema).stage.lower() if name else None

    def read(relation: str) -> DataFrame:
        if stage is not None and _relation_key(relation) == stage:
            return spark.table(session_stage(spark, relation, table_data or {}, business_date))
        return spark.table(relation)

    return read


def known_empty(frame: DataFrame) -> bool:
    """Whether a DataFrame has no rows, known from its optimized plan without reading it.

    Spark folds a plan over an empty local relation (``limit(0)``, a filter that is always
    false) into an empty local relation; any other plan would have to run to say.
    """
    plan = frame._jdf.queryExecution().optimizedPlan()  # noqa: SLF001 - the plan, not a job
    return plan.getClass().getSimpleName() == "LocalRelation" and plan.data().isEmpty()
