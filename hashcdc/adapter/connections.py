"""Credentials and connection manager of the hashcdc adapter type."""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)


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
    """dbt-spark's connection manager under the ``hashcdc`` type name."""

    TYPE = "hashcdc"
