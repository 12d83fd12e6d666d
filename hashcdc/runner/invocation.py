"""One dbt invocation in this process and the audit rows it appended (``cdc_runs``).

Every command that runs table-dates — the date loop, the stream's micro-batches and
closes, the demo — invokes dbt and then reads what the invocation recorded per table:
:func:`invoke_and_audit` is that, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt_common.invocation import get_invocation_id

from hashcdc.runner import lineage
from hashcdc.runtime.project import dbt_args, invoke_dbt
from hashcdc.state import audit


@dataclass(frozen=True)
class Invocation:
    """A dbt command's result and the audit rows (one per table) it appended."""

    result: Any
    rows: list[Any]

    @property
    def success(self) -> bool:
        """Whether dbt reported success."""
        return bool(self.result.success)

    def first_error(self) -> str:
        """The first failed node's message (its first line), or dbt's own."""
        for node in getattr(self.result.result, "results", None) or []:
            if str(node.status) in ("error", "fail") and node.message:
                return f"{node.node.name}: {str(node.message).strip().splitlines()[0]}"
        if self.result.exception is not None:
            return str(self.result.exception).strip().splitlines()[0]
        return "dbt failed (see the log)"


def invoke_and_audit(
    spark: Any, project_dir: Path, command: str, args: list[str], business_date: str
) -> Invocation:
    """Run ``dbt <command> <args>`` for ``business_date``; its result and audit rows."""
    result = invoke_dbt(dbt_args(command, project_dir, args), business_date)
    rows = audit.invocation_rows(spark, audit.audit_table(project_dir), [get_invocation_id()])
    lineage.emit(project_dir, rows)
    return Invocation(result, list(rows))
