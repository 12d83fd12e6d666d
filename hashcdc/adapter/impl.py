"""The hashcdc adapter: dbt-spark with a ``session`` Python submission method."""

from __future__ import annotations

from typing import Any

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.spark.impl import SparkAdapter

from hashcdc.adapter.connections import HashcdcConnectionManager
from hashcdc.adapter.python_submissions import SessionPythonJobHelper


class HashcdcAdapter(SparkAdapter):
    """dbt-spark's adapter whose Python models run in the dbt process's SparkSession."""

    ConnectionManager = HashcdcConnectionManager

    @property
    def default_python_submission_method(self) -> str:
        """Python models run in the active SparkSession unless a model asks otherwise."""
        return "session"

    @property
    def python_submission_helpers(self) -> dict[str, type[PythonJobHelper]]:
        """dbt-spark's Databricks helpers plus the in-process ``session`` helper."""
        return {**super().python_submission_helpers, "session": SessionPythonJobHelper}

    def generate_python_submission_response(self, submission_result: Any) -> Any:
        """Report a Python model like a SQL statement (no rows affected are known)."""
        return self.connections.get_response(None)
