"""Run compiled dbt Python models in the SparkSession of the dbt process."""

from __future__ import annotations

import traceback
from typing import Any

from dbt.adapters.base import PythonJobHelper
from dbt_common.exceptions import DbtRuntimeError

from hashcdc.adapter.connections import HashcdcCredentials
from hashcdc.errors import HashcdcError
from hashcdc.runtime.project import session_with
from hashcdc.runtime.sessions import node_session


class SessionPythonJobHelper(PythonJobHelper):
    """Execute a compiled Python model with ``spark`` bound to its node's SparkSession.

    The session is the one the node's SQL statements run in (:mod:`hashcdc.runtime.sessions`;
    one JVM, one metastore and one warehouse for all), or one held for the model alone when
    the node has run no statement yet.
    """

    def __init__(self, parsed_model: dict[str, Any], credentials: HashcdcCredentials) -> None:
        self.parsed_model = parsed_model
        self.credentials = credentials

    def submit(self, compiled_code: str) -> None:
        """Execute the compiled model; input errors surface as one clear dbt error."""
        process_session = session_with(self.credentials.server_side_parameters)
        with node_session(process_session, self.parsed_model.get("unique_id")) as spark:
            self._execute(compiled_code, spark)

    def _execute(self, compiled_code: str, spark: Any) -> None:
        model_name = self.parsed_model.get("alias") or self.parsed_model.get("name")
        namespace: dict[str, Any] = {"spark": spark, "__name__": f"dbt_python_model_{model_name}"}
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
