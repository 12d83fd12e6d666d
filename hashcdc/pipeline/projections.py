"""Plans of many tables' frames: projections built once per process, unions in one query.

A stage's projections name columns; they do not depend on the frame they are selected
from, the files or the date. Building one is thousands of calls into the JVM, each waiting
on its answer (about a third of a second for a 15-column table): a group of a hundred
tables would pay it a hundred times a date, a stream at every micro-batch. The engine is
one long process, so each is built the first time a configuration needs it and kept.
Many frames (a group's members, their checks' samples) are unioned by :func:`union_all`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.classic.column import _to_java_column, _to_seq
from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

T = TypeVar("T")

# More than any project's tables need; past it, the oldest are built again.
KEPT = 8192
# The branches of one `union all` query: Spark's parser refuses a chain of 1,000 as too
# complex (FAILED_TO_PARSE_TOO_COMPLEX), so more frames are unioned in steps.
UNION_BRANCHES = 100  # at least 2
_lock = threading.Lock()
_built: dict[Hashable, object] = {}


def built_once(key: Hashable, build: Callable[[], T]) -> T:
    """What ``build`` returns for ``key``, built the first time only (per JVM gateway).

    ``key`` must say everything the expressions depend on (the columns' configs, names).
    """
    # Expressions are JVM objects: a new gateway (another JVM) builds its own.
    scoped = (id(SparkContext._gateway), key)  # noqa: SLF001 - the gateway has no public handle
    with _lock:
        found = _built.get(scoped)
    if found is not None:
        return found  # type: ignore[return-value]
    value = build()
    with _lock:
        if len(_built) >= KEPT:
            _built.pop(next(iter(_built)))
        _built[scoped] = value
    return value


def selected(
    frame: DataFrame, key: Hashable, build: Callable[[], Sequence[Column | str]]
) -> DataFrame:
    """``frame.select(*build())``, its projection built once per ``key`` and kept in the JVM.

    It is kept (:func:`built_once`) as the JVM's own sequence of columns: py4j hands a
    Python list to the JVM one element a call, so a select of 30 columns is 30 round trips
    before Spark sees it — per select, per member of a group, per date. The kept sequence
    is one argument: the select is one call.
    """
    columns = built_once(
        ("selected", key),
        lambda: _to_seq(frame.sparkSession.sparkContext, list(build()), _to_java_column),
    )
    return ClassicFrame(frame._jdf.select(columns), frame.sparkSession)  # noqa: SLF001


def union_all(spark: SparkSession, frames: list[DataFrame], prefix: str) -> DataFrame:
    """The frames' rows as one DataFrame, their columns in the same order, analysed once.

    A chain of ``union`` calls analyses the growing plan at each step (quadratic in the
    members); one ``union all`` query of temporary views (``<prefix><n>``) is one analysis.
    More than :data:`UNION_BRANCHES` frames are unioned in groups of that many first
    (``<prefix><group>_<n>``), then the groups (``<prefix>all_…``).
    """
    if len(frames) == 1:
        return frames[0]
    if len(frames) > UNION_BRANCHES:
        groups = [
            union_all(spark, frames[start : start + UNION_BRANCHES], f"{prefix}{number}_")
            for number, start in enumerate(range(0, len(frames), UNION_BRANCHES))
        ]
        return union_all(spark, groups, f"{prefix}all_")
    views = []
    for number, frame in enumerate(frames):
        view = f"{prefix}{number}"
        frame.createOrReplaceTempView(view)
        views.append(f"select * from {view}")
    return spark.sql(" union all ".join(views))
