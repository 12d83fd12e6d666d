"""Run compiled dbt Python models in the SparkSession of the dbt process."""

from __future__ import annotations

import traceback
from typing import Any

from dbt.adapters.base import PythonJobHelper
from dbt_common.exceptions import DbtRuntimeError

from hashcdc.adapter.connections import HashcdcCredentials
from hashcdc.errors import HashcdcError
from hashcdc.runtime.project import session_with


class SessionPythonJobHelper(PythonJobHelper):
    """Execute a compiled Python model with ``spark`` bound to the active SparkSession.

    The session is the one dbt-spark's ``session`` connection method uses (same builder
    settings from ``server_side_parameters``), so SQL and Python models share one JVM,
    one metastore and one warehouse.
    """

    def __init__(self, parsed_model: dict[str, Any], credentials: HashcdcCredentials) -> None:
        self.parsed_model = parsed_model
        self.credentials = credentials

    def _spark_session(self) -> Any:
        return session_with(self.credentials.server_side_parameters)

    def submit(self, compiled_code: str) -> None:
        """Execute the compiled model; input errors surface as one clear dbt error."""
        model_name = self.parsed_model.get("alias") or self.parsed_model.get("name")
        namespace: dict[str, Any] = {
            "spark": self._spark_session(),
            "__name__": f"dbt_python_model_{model_name}",
        }
        code = compile(compiled_code, f"<dbt python model {model_name}>", "exec")
        try:
            exec(code, namespace)  # noqa: S102 - executing dbt's compiled model is the purpose
        except HashcdcError as exc:
            raise DbtRuntimeError(str(exc)) from None
        except Exception as exc:
            # dbt would report any other exception as a bare "Compilation Error" with its
            # message alone: keep the type and where it was raised.
            where = "".join(traceback.format_exception(exc, limit=-4))
            raise DbtRuntimeError(f"python model {model_name} failed:\n{where}") from exc
