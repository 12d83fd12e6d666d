"""``hashcdc bench --formats``: Delta Lake and Iceberg on the state's own shape, one session.

The measurement behind the state's table format (docs/architecture.md). For each size, a
state of ``keyhash``, ``nonkeyhash`` and 13 payload columns is created in both formats;
then one typical day (1% changed: 0.5% updated, 0.25% deleted, 0.25% new) is applied with
the ``MERGE INTO`` hashcdc issues (a delete for D, an update for U, an insert for I).
Reported per format: create, MERGE, the bytes the MERGE wrote against the table's bytes,
reading the diff's columns (``keyhash, nonkeyhash``) and a count after the MERGE, the
format's compaction, and time travel back to the first version.

Delta is the session catalog (as in every hashcdc session); Iceberg is a catalog of its
own over a folder (``type=hadoop``), so that neither format's metastore settings weigh on
the other: the metastore's share is a constant per commit, measured by ``hashcdc bench``.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hashcdc.runtime.jars import ICEBERG_JAR, TABLE_FORMAT_SETTINGS, jar_paths

PAYLOAD_COLUMNS = 13
UPDATED, DELETED, INSERTED = 0.005, 0.0025, 0.0025


def _timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return round(time.perf_counter() - start, 2)


def _state_rows(spark: Any, start: int, end: int, version: int) -> Any:
    """Rows ``start``..``end`` of the state's shape; ``version`` changes the payload."""
    payload = ", ".join(
        f"cast(rand({column * 31 + version}) * 1e6 as double) as value_{column}"
        if column % 2
        else f"uuid() as value_{column}"
        for column in range(PAYLOAD_COLUMNS)
    )
    return spark.sql(
        f"select unhex(md5(cast(id as string))) as keyhash, "
        f"unhex(md5(cast(id * {version + 7} as string))) as nonkeyhash, {payload} "
        f"from range({start}, {end})"
    )


def _changes(spark: Any, rows: int) -> Any:
    """The typical day's change rows, each with its operation (U, D or I)."""
    updated = int(rows * UPDATED)
    deleted = int(rows * DELETED)
    inserted = int(rows * INSERTED)
    update_rows = _state_rows(spark, 0, updated, 1).selectExpr("*", "'U' as operation")
    delete_rows = _state_rows(spark, updated, updated + deleted, 0).selectExpr(
        "*", "'D' as operation"
    )
    insert_rows = _state_rows(spark, rows, rows + inserted, 0).selectExpr("*", "'I' as operation")
    return update_rows.unionByName(delete_rows).unionByName(insert_rows)


MERGE = """
merge into {table} as target
using changes as source
on target.keyhash = source.keyhash
when matched and source.operation = 'D' then delete
when matched then update set *
when not matched and source.operation != 'D' then insert *
"""


def _noop_read(spark: Any, table: str, version_clause: str = "") -> None:
    spark.sql(f"select keyhash, nonkeyhash from {table} {version_clause}").write.format(
        "noop"
    ).mode("overwrite").save()


def _delta(spark: Any, rows: int) -> dict[str, Any]:
    table = "format_probe_delta"
    spark.sql(f"drop table if exists {table}")
    figures: dict[str, Any] = {}
    figures["create_s"] = _timed(
        lambda: (
            _state_rows(spark, 0, rows, 0)
            .write.format("delta")
            .option("delta.enableDeletionVectors", "true")
            .saveAsTable(table)
        )
    )
    spark.sql(f"alter table {table} set tblproperties ('delta.enableDeletionVectors'='true')")
    _changes(spark, rows).cache().createOrReplaceTempView("changes")
    spark.table("changes").count()
    figures["merge_s"] = _timed(lambda: spark.sql(MERGE.format(table=table)).collect())
    metrics = spark.sql(f"describe history {table} limit 1").collect()[0]["operationMetrics"]
    figures["merge_bytes_written"] = int(metrics.get("numTargetBytesAdded", 0))
    figures["table_bytes"] = int(spark.sql(f"describe detail {table}").collect()[0]["sizeInBytes"])
    figures["read_hashes_s"] = _timed(lambda: _noop_read(spark, table))
    figures["count_s"] = _timed(lambda: spark.sql(f"select count(*) from {table}").collect())
    figures["compact_s"] = _timed(lambda: spark.sql(f"optimize {table}").collect())
    first = spark.sql(f"select count(*) from {table} version as of 1").collect()[0][0]
    figures["time_travel_ok"] = first == rows
    spark.sql(f"drop table {table}")
    return figures


def _iceberg(spark: Any, rows: int) -> dict[str, Any]:
    table = "iceberg.probe.state"
    spark.sql("create namespace if not exists iceberg.probe")
    spark.sql(f"drop table if exists {table} purge")
    figures: dict[str, Any] = {}

    def create() -> None:
        _state_rows(spark, 0, rows, 0).writeTo(table).tableProperty(
            "format-version", "2"
        ).tableProperty("write.merge.mode", "merge-on-read").tableProperty(
            "write.delete.mode", "merge-on-read"
        ).tableProperty("write.update.mode", "merge-on-read").create()

    figures["create_s"] = _timed(create)
    _changes(spark, rows).cache().createOrReplaceTempView("changes")
    spark.table("changes").count()
    first_snapshot = spark.sql(
        f"select snapshot_id from {table}.snapshots order by committed_at limit 1"
    ).collect()[0][0]
    figures["merge_s"] = _timed(lambda: spark.sql(MERGE.format(table=table)).collect())
    summary = spark.sql(
        f"select summary from {table}.snapshots order by committed_at desc limit 1"
    ).collect()[0][0]
    figures["merge_bytes_written"] = int(summary.get("added-files-size", 0))
    figures["table_bytes"] = int(summary.get("total-files-size", 0))
    figures["read_hashes_s"] = _timed(lambda: _noop_read(spark, table))
    figures["count_s"] = _timed(lambda: spark.sql(f"select count(*) from {table}").collect())
    figures["compact_s"] = _timed(
        lambda: spark.sql(
            "call iceberg.system.rewrite_data_files(table => 'probe.state', "
            "options => map('delete-file-threshold', '1'))"
        ).collect()
    )
    first = spark.sql(f"select count(*) from {table} version as of {first_snapshot}").collect()
    figures["time_travel_ok"] = first[0][0] == rows
    spark.sql(f"drop table {table} purge")
    return figures


def run(sizes: list[int], output: Path) -> dict[str, Any]:
    """Both formats at each size in one session; written to ``<output>/formats.json``."""
    from pyspark.sql import SparkSession

    work = output / "formats"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    delta_catalog = TABLE_FORMAT_SETTINGS["spark.sql.catalog.spark_catalog"]
    jars = ",".join(str(path) for path in jar_paths() + jar_paths((ICEBERG_JAR,)))
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .config("spark.jars", jars)
        .config("spark.sql.warehouse.dir", str(work / "warehouse"))
        .config(
            "spark.sql.extensions",
            TABLE_FORMAT_SETTINGS["spark.sql.extensions"]
            + ",org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        )
        .config("spark.sql.catalog.spark_catalog", delta_catalog)
        .config("spark.sql.catalog.iceberg", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.iceberg.type", "hadoop")
        .config("spark.sql.catalog.iceberg.warehouse", str(work / "iceberg"))
        .config("spark.sql.shuffle.partitions", "8")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    report: dict[str, Any] = {}
    for rows in sizes:
        report[str(rows)] = {"delta": _delta(spark, rows), "iceberg": _iceberg(spark, rows)}
        (output / "formats.json").write_text(json.dumps(report, indent=2))
    spark.stop()
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as a markdown table, one row per size and measure."""
    lines = ["| rows | measure | Delta 4.0.0 | Iceberg 1.10.0 |", "| ---: | --- | ---: | ---: |"]
    for rows, formats in report.items():
        delta, iceberg = formats["delta"], formats["iceberg"]
        for key in delta:
            if key == "merge_bytes_written":
                cells = [
                    f"{f[key] / 2**20:.1f} MiB of {f['table_bytes'] / 2**20:.0f} MiB"
                    for f in (delta, iceberg)
                ]
            elif key == "table_bytes":
                continue
            else:
                cells = [str(f[key]) for f in (delta, iceberg)]
            lines.append(f"| {int(rows):,} | {key} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"
