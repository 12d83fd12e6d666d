"""Credentials and connection manager of the hashcdc adapter type."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.exceptions import FailedToConnectError
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.exceptions import DbtRuntimeError

from hashcdc.errors import HashcdcError
from hashcdc.runtime.project import session_with

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


class HashcdcConnectionManager(SparkConnectionManager):
    """dbt-spark's connection manager under the ``hashcdc`` type name.

    The first connection starts Spark the way ``hashcdc`` does
    (:func:`hashcdc.runtime.project.session_with`): an embedded metastore held by another process is
    reported in one line, a shared one gets its tables on first use.
    """

    TYPE = "hashcdc"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        """Open a connection on the process's SparkSession, started here if need be."""
        if connection.state != ConnectionState.OPEN:
            try:
                session_with(connection.credentials.server_side_parameters)
            except HashcdcError as exc:
                raise FailedToConnectError(str(exc)) from None
        return super().open(connection)

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
