"""Credentials and connection manager of the hashcdc adapter type."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.exceptions import FailedToConnectError
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt.adapters.spark.session import Cursor, SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError

from hashcdc.errors import HashcdcError
from hashcdc.runtime.project import session_with
from hashcdc.runtime.sessions import HeldSession, hold

# A refusal the SQL itself raises (``raise_error``), as Spark words it in a task's failure.
_USER_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (.+?) SQLSTATE: P0001", re.DOTALL)


@dataclass
class HashcdcCredentials(SparkCredentials):
    """dbt-spark credentials with defaults for an in-process SparkSession.

    ``method`` defaults to ``session`` and ``host`` to ``local``: neither names a server,
    because the Spark driver is the dbt process itself. Everything Spark needs (master,
    warehouse, metastore) goes in ``server_side_parameters``.
    """

    host: str | None = "local"
    method: SparkConnectionMethod = SparkConnectionMethod.SESSION

    @property
    def type(self) -> str:
        """Adapter type name used in ``profiles.yml``."""
        return "hashcdc"


class _HeldCursor(Cursor):
    """dbt-spark's session cursor, its statements run in the connection's own session."""

    def __init__(self, held: HeldSession) -> None:
        super().__init__()
        self.held = held

    def execute(self, sql: str, *parameters: Any) -> None:
        """Run a statement (dbt-spark's cursor, without re-applying the profile's settings)."""
        from pyspark.sql.utils import AnalysisException

        if parameters:
            sql = sql % parameters
        try:
            self._df = self.held.session.sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc


class _HeldSessionConnection(SessionConnectionWrapper):
    """A dbt connection holding a SparkSession of its own (:mod:`hashcdc.runtime.sessions`)."""

    def __init__(self, held: HeldSession) -> None:
        super().__init__(handle=None)  # type: ignore[arg-type]
        self.held = held

    def cursor(self) -> _HeldSessionConnection:
        """A cursor on the held session."""
        self._cursor = _HeldCursor(self.held)
        return self


class HashcdcConnectionManager(SparkConnectionManager):
    """dbt-spark's connection manager under the ``hashcdc`` type name.

    The first connection starts Spark the way ``hashcdc`` does
    (:func:`hashcdc.runtime.project.session_with`): an embedded metastore held by another process is
    reported in one line, a shared one gets its tables on first use. Each open connection
    holds a SparkSession of its own (:mod:`hashcdc.runtime.sessions`), so that dbt's threads
    run nodes side by side, each with its own session settings.
    """

    TYPE = "hashcdc"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        """Open a connection on a session of its own, Spark started here if need be."""
        if connection.state == ConnectionState.OPEN:
            return connection
        try:
            process_session = session_with(connection.credentials.server_side_parameters)
        except HashcdcError as exc:
            raise FailedToConnectError(str(exc)) from None
        connection.handle = _HeldSessionConnection(hold(process_session, connection.name))
        connection.state = ConnectionState.OPEN
        return connection

    @classmethod
    def close(cls, connection: Connection) -> Connection:
        """Close the connection; its session goes back to the pool."""
        handle = connection._handle  # noqa: SLF001 - the handle itself, never opening a lazy one
        closed = super().close(connection)
        if isinstance(handle, _HeldSessionConnection):
            handle.held.give_back()
        return closed

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        """dbt-spark's handler; a refusal raised by the SQL (``raise_error``) is its message.

        Raised inside a task, it would otherwise reach the user inside a JVM stack trace.
        """
        with super().exception_handler(sql):
            try:
                yield
            except Exception as exc:
                refusal = _USER_RAISED.search(str(exc))
                if refusal is None:
                    raise
                raise DbtRuntimeError(refusal.group(1)) from None
