"""A SparkSession for each dbt connection, so a date's tables can run side by side.

A node sets session settings for its own statements: a state's pre-hook sets the business
date that Delta records in the commit's ``userMetadata`` (:mod:`hashcdc.state.versions`),
its post-hook resets it. In one shared session, a node of another table running on
another of dbt's threads would commit with that date, or without one after the reset.

So each open dbt connection (one per dbt thread at a time) holds a session of its own: the
process's session when it is free, otherwise a sibling (``newSession``: the same Spark
context, metastore, cache and global temporary views; its own settings, current database
and temporary views). A sibling starts with the process session's settings, and is handed
out in the process session's current database.
A session given back makes the others resolve tables again: each keeps the tables it read
with their files, and a write refreshes the writer's alone.
Sessions go back to a pool when their connection closes and are handed out again: Spark
4.0.1 never frees a session (SPARK-54753), so a process has at most as many as dbt ever
ran threads at once. Each session's jobs go to a FAIR scheduler pool of its own, so one
table's large job does not hold the others' small ones back.

Code that runs inside a node (the adapter's calls, Python models) takes its session from
:func:`thread_session`; code outside dbt uses the process's session as before.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from hashcdc.runtime.profile import NODE_PROPERTY
from hashcdc.state.versions import COMMIT_METADATA_SETTING

# Local property naming the FAIR scheduler pool of a thread's jobs.
SCHEDULER_POOL_PROPERTY = "spark.scheduler.pool"

_lock = threading.Lock()
# Sessions not held by an open connection, with the pool name of each.
_free: list[tuple[Any, str]] = []
# Every session handed out so far, by pool name (to tell the process's own from siblings).
_made: dict[str, Any] = {}
_bound = threading.local()


class HeldSession:
    """A session held by one dbt connection until :meth:`give_back`."""

    def __init__(self, session: Any, pool: str) -> None:
        self.session = session
        self.pool = pool
        self.open = True

    def bind(self, node: str | None = None) -> None:
        """Make it the calling thread's session; its jobs go to its pool, named for ``node``."""
        _bound.held = self
        context = self.session.sparkContext
        context.setLocalProperty(SCHEDULER_POOL_PROPERTY, self.pool)
        context.setLocalProperty(NODE_PROPERTY, node)

    def give_back(self) -> None:
        """Return the session to the pool (once); the thread falls back to the process's."""
        if not self.open:
            return
        self.open = False
        if getattr(_bound, "held", None) is self:
            _bound.held = None
            self.session.sparkContext.setLocalProperty(NODE_PROPERTY, None)
        with _lock:
            _free.append((self.session, self.pool))
            others = [session for session in _made.values() if session is not self.session]
        # Each session keeps the tables it resolved, with their file listings, and a write
        # refreshes the writer's alone: a parquet table (the run audit) rewritten here
        # would be read from files since deleted in the others.
        for session in others:
            _forget_resolved_tables(session)


def hold(process_session: Any, node: str | None = None) -> HeldSession:
    """A session for a connection opening now, bound to the calling thread.

    Parameters
    ----------
    process_session : SparkSession
        The process's session (:func:`hashcdc.runtime.project.session_with`): handed out
        when free, the parent of siblings otherwise.
    node : str, optional
        What the connection runs (dbt names a node's connection by the node's unique id):
        the thread's jobs carry it.

    """
    with _lock:
        _forget_stopped(process_session)
        if _free:
            # The process's session first: on one thread every node runs in it, as
            # without the pool, and siblings stay idle.
            entry = next((e for e in _free if e[0] is process_session), _free[-1])
            _free.remove(entry)
            session, pool = entry
        elif not _made:
            session, pool = process_session, "hashcdc-0"
        else:
            session, pool = _sibling(process_session), f"hashcdc-{len(_made)}"
        _made[pool] = session
    # A node that failed before its post-hook left its commit setting behind.
    session.conf.unset(COMMIT_METADATA_SETTING)
    if session is not process_session:
        # The process's session may have moved to another database since (a command of
        # another project in the same process).
        database = process_session.catalog.currentDatabase()
        if session.catalog.currentDatabase() != database:
            session.catalog.setCurrentDatabase(database)
        # hashcdc's own code writes in the process's session outside any connection
        # (retention, the audit): a sibling reads those tables anew.
        _forget_resolved_tables(session)
    held = HeldSession(session, pool)
    held.bind(node)
    return held


def thread_session() -> Any:
    """The calling thread's session: its open connection's, else the process's."""
    held = getattr(_bound, "held", None)
    if held is not None and held.open:
        return held.session
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


def _forget_resolved_tables(session: Any) -> None:
    """Make ``session`` resolve every table again (metastore entry, files) on its next read."""
    session._jsparkSession.sessionState().catalog().invalidateAllCachedTables()  # noqa: SLF001


def _sibling(process_session: Any) -> Any:
    sibling = process_session.newSession()
    conf = process_session.conf
    for key, value in conf.getAll.items():
        if key != COMMIT_METADATA_SETTING and conf.isModifiable(key):
            sibling.conf.set(key, value)
    return sibling


def _forget_stopped(process_session: Any) -> None:
    """Drop the sessions of a Spark context since stopped (a new one starts afresh)."""
    if _made and next(iter(_made.values())).sparkContext is not process_session.sparkContext:
        _made.clear()
        _free.clear()


@contextlib.contextmanager
def node_session(process_session: Any, node: str | None = None) -> Iterator[Any]:
    """The calling thread's held session, or one held for the block (for ``node``)."""
    held = getattr(_bound, "held", None)
    if held is not None and held.open:
        yield held.session
        return
    held = hold(process_session, node)
    try:
        yield held.session
    finally:
        held.give_back()
