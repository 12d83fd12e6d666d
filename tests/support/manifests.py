"""An extra transport, as a contributor adding one writes it: one Transport subclass.

A date's extract named by a manifest: ``source.path`` names a ``.manifest`` file per
date, a list of data files (one a line, relative to the manifest's folder), as deliveries
that land files first and a manifest last do. Files not listed are not read. Everything
else (reading lines, partitions, numbering rejected rows, the stream's watch) is the
landing zone's, inherited. The ``manifests`` fixture registers it.
"""

from __future__ import annotations

from typing import ClassVar

from pyspark.sql import SparkSession

from hashcdc.config import TableConfig
from hashcdc.errors import InputDataError
from hashcdc.pipeline.transports.files import Files, resolve_source_path
from hashcdc.runtime.hadoop import HadoopFiles


class Manifests(Files):
    """Data files listed by a manifest per business date."""

    name: ClassVar[str] = "manifests"
    description: ClassVar[str] = "the data files a .manifest file of the date lists"

    def carries(self, table: TableConfig) -> bool:
        return table.source.path.endswith(".manifest")

    def locations(self, spark: SparkSession, table: TableConfig, business_date: str) -> list[str]:
        manifest = resolve_source_path(table, business_date)
        hadoop = HadoopFiles.of(spark)
        if not hadoop.exists(manifest):
            raise InputDataError(
                f"table '{table.name}': no manifest for business date {business_date} at "
                f"{manifest} (source.path in {table.config_file}); nothing was written."
            )
        folder = manifest.rsplit("/", 1)[0]
        listed = [line.strip() for line in hadoop.read_text(manifest).splitlines()]
        return [f"{folder}/{name}" for name in listed if name]


CONFIG = {
    "name": "manifest_table",
    "extract_type": "full",
    "max_reject_fraction": 0.5,
    "source": {"path": "landing/manifest_table/{business_date}.manifest", "format": "csv"},
    "columns": [
        {"name": "id", "type": "int", "key": True},
        {"name": "amount", "type": "decimal(8,2)"},
    ],
}
