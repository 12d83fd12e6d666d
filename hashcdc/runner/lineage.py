"""Each run's OpenLineage events, with the column lineage of every output.

After each dbt invocation of a hashcdc command (a date, a micro-batch, a close), one
``RunEvent`` per table of its audit rows: ``COMPLETE`` (or ``FAIL``), the job
``hashcdc.<schema>.<table>``, the run's id (the invocation's and the table's), the
table's source as the input dataset (its fields in the schema facet) and each of its
outputs — ``current``, ``history``, ``scd2``, ``rejects``, and ``changelog`` and the
sensitive tables when it has them — with the column-lineage facet from
:func:`hashcdc.config.lineage.column_lineage`. Sent with ``openlineage-python``: to a file
by default (``logs/openlineage.jsonl``, one event a line), or to an HTTP endpoint
(Marquez's ``/api/v1/lineage``) by the project's var ``hashcdc_lineage``:

- ``{file: path}``: another file (relative to the project);
- ``{url: http://host:5000}``: the HTTP transport (``endpoint`` too, if not the default);
- ``false``: no events.

A transport that fails (an endpoint away) costs a warning, never the run.
"""

from __future__ import annotations

import datetime as dt
import sys
import uuid
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import column_lineage_dataset as facet
from openlineage.client.facet_v2 import schema_dataset
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import HttpConfig, HttpTransport
from openlineage.client.transport.transport import Transport

from hashcdc import __version__
from hashcdc.config import TableConfig, load_table_configs
from hashcdc.config.lineage import column_lineage
from hashcdc.runtime.project import profile_output
from hashcdc.state.audit import project_vars
from hashcdc.state.service_levels import SUCCEEDED

LINEAGE_VAR = "hashcdc_lineage"
DEFAULT_FILE = Path("logs") / "openlineage.jsonl"
PRODUCER = f"https://pypi.org/project/hashcdc/{__version__}"
JOB_NAMESPACE = "hashcdc"
# Where the outputs live: the Spark catalog's tables, named <schema>.<table>.
OUTPUT_NAMESPACE = "spark_catalog"


def transport_of(project_dir: Path) -> Transport | None:
    """The project's transport (its var ``hashcdc_lineage``), None when turned off."""
    setting = project_vars(project_dir).get(LINEAGE_VAR, {})
    if setting is False:
        return None
    setting = setting or {}
    if setting.get("url"):
        config = HttpConfig(url=str(setting["url"]))
        if setting.get("endpoint"):
            config = HttpConfig(url=str(setting["url"]), endpoint=str(setting["endpoint"]))
        return HttpTransport(config)
    path = project_dir / str(setting.get("file") or DEFAULT_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileTransport(FileConfig(log_file_path=str(path), append=True))


def _tables(project_dir: Path) -> dict[str, TableConfig]:
    """The project's table configs, read again only when a config file changed."""
    files = tuple(
        (path.name, path.stat().st_mtime_ns)
        for path in sorted((project_dir / "tables").glob("*.y*ml"))
    )
    return _configs(project_dir, files)


@lru_cache(maxsize=8)  # a config edited in a long-lived engine: a new entry
def _configs(project_dir: Path, files: tuple[tuple[str, int], ...]) -> dict[str, TableConfig]:
    return {t.name: t for t in load_table_configs(project_dir / "tables")}


@lru_cache(maxsize=8)  # a config edited in a long-lived engine: a new entry
def _client(project_dir: Path, settings_changed: int) -> OpenLineageClient | None:
    """The client of the project's transport (made again when dbt_project.yml changed)."""
    transport = transport_of(project_dir)
    return None if transport is None else OpenLineageClient(transport=transport)


def input_dataset(table: TableConfig) -> InputDataset:
    """The table's source: a database table, a Kafka topic or a landing path; its fields."""
    source = table.source
    if source.database is not None:
        db = source.database
        namespace = f"{db.kind}://{db.host}:{db.port or ''}"
        name = f"{db.database}.{db.table or 'query'}"
    elif source.kafka is not None:
        namespace = f"kafka://{source.kafka.bootstrap_servers.split(',')[0]}"
        name = source.kafka.topic
    else:
        # The path as configured: its dates' files ({business_date}) are one dataset.
        namespace, name = "file", str(source.path)
    fields = [
        schema_dataset.SchemaDatasetFacetFields(name=field, type="string")
        for column in table.columns
        for field in column.source_fields
    ]
    return InputDataset(
        namespace=namespace,
        name=name,
        facets={"schema": schema_dataset.SchemaDatasetFacet(fields=fields, producer=PRODUCER)},
    )


def output_datasets(table: TableConfig, schema: str, source: InputDataset) -> list[OutputDataset]:
    """Each output of the table, its columns' lineage from the source's fields."""
    outputs = []
    for relation, columns in column_lineage(table).items():
        fields = {
            column: facet.Fields(
                inputFields=[
                    facet.InputField(
                        namespace=source.namespace,
                        name=source.name,
                        field=field,
                        transformations=[
                            facet.Transformation(
                                type=inputs.type,
                                subtype=inputs.subtype,
                                description=inputs.description,
                                masking=inputs.masking,
                            )
                        ],
                    )
                    for field in inputs.fields
                ],
                transformationType=inputs.type,
                transformationDescription=inputs.description,
            )
            for column, inputs in columns.items()
        }
        outputs.append(
            OutputDataset(
                namespace=OUTPUT_NAMESPACE,
                name=f"{schema}.{relation}",
                facets={
                    "columnLineage": facet.ColumnLineageDatasetFacet(
                        fields=fields, producer=PRODUCER
                    )
                },
            )
        )
    return outputs


def run_event(table: TableConfig, row: dict[str, Any], schema: str) -> RunEvent:
    """The event of one audit row (a table's run in one invocation)."""
    source = input_dataset(table)
    ended = row["ended_at"] or dt.datetime.now()
    ended = ended if ended.tzinfo else ended.astimezone()
    run_id = uuid.uuid5(uuid.NAMESPACE_URL, f"hashcdc:{row['invocation_id']}:{table.name}")
    return RunEvent(
        eventType=RunState.COMPLETE if row["status"] in SUCCEEDED else RunState.FAIL,
        eventTime=ended.isoformat(),
        producer=PRODUCER,
        run=Run(runId=str(run_id)),
        job=Job(namespace=JOB_NAMESPACE, name=f"{schema}.{table.name}"),
        inputs=[source],
        outputs=output_datasets(table, schema, source),
    )


def emit(project_dir: Path, rows: Sequence[Any]) -> None:
    """Send the events of an invocation's audit rows (nothing when turned off)."""
    client = _client(project_dir, (project_dir / "dbt_project.yml").stat().st_mtime_ns)
    if client is None or not rows:
        return
    tables = _tables(project_dir)
    schemas: dict[str, str] = {}
    for row in (r.asDict() if hasattr(r, "asDict") else r for r in rows):
        table = tables.get(row["table_name"])
        if table is None:
            continue
        target = row["target_name"]
        if target not in schemas:
            schemas[target] = profile_output(project_dir, target)["schema"]
        try:
            client.emit(run_event(table, row, schemas[target]))
        except Exception as exc:  # noqa: BLE001 - lineage never fails a run
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            print(
                f"hashcdc: the OpenLineage events of this run were not sent ({first}); check "
                f"the var {LINEAGE_VAR} in dbt_project.yml and its destination",
                file=sys.stderr,
            )
            return
