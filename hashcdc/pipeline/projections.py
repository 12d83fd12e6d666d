"""Column expressions built once per process for a configuration, reused by every date.

A stage's projections name columns; they do not depend on the frame they are selected
from, the files or the date. Building one is thousands of calls into the JVM, each waiting
on its answer (about a third of a second for a 15-column table): a group of a hundred
tables would pay it a hundred times a date, a stream at every micro-batch. The engine is
one long process, so each is built the first time a configuration needs it and kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

from pyspark import SparkContext

T = TypeVar("T")

# More than any project's tables need; past it, the oldest are built again.
KEPT = 8192
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
