"""Layout: a table's own bucket count for its stage (kept in the session, never written), and
a state that a date changes only where its keys changed (a Delta MERGE with deletion
vectors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from servers import snapshot_sql

from hashcdc.codegen import datagen, generate
from hashcdc.config import load_table_configs
from hashcdc.pipeline.session_stage import view_name
from hashcdc.runtime.project import table_selector

DATES = ["2023-09-01", "2023-09-02"]
TABLE = "lay_rebucket"


def _stage_partitions(project: Any, business_date: str) -> int:
    """The partitions of the stage the date's run kept; no stage table is written."""
    spark = project.spark
    schema = spark.catalog.currentDatabase()
    assert not spark.catalog.tableExists(f"{schema}.stg_{TABLE}")
    return spark.table(view_name(f"{schema}.stg_{TABLE}", business_date)).rdd.getNumPartitions()


def _rows(project: Any) -> list[tuple[str, str]]:
    relations = [f"{TABLE}_state", f"{TABLE}_current", f"{TABLE}_history"]
    return sorted((r.relation, r.row) for r in project.spark.sql(snapshot_sql(relations)).collect())


def test_a_new_bucket_count_changes_the_stage_and_a_date_rewrites_no_unchanged_row(
    project: Any,
) -> None:
    options = datagen.DatagenOptions(
        table_name=TABLE, initial_records=2000, dates=DATES, seed=3, key_columns=2
    )
    datagen.generate_extracts(project.spark, options, project.root)
    config_file = project.root / "tables" / f"{TABLE}.yml"
    config = yaml.safe_load(config_file.read_text())

    def configure(buckets: int) -> Any:
        config_file.write_text(yaml.safe_dump(config | {"buckets": buckets}))
        tables = load_table_configs(project.root / "tables")
        generate.write(project.root, tables)
        return tables[0]

    def build(business_date: str, deletion_vectors_from_mib: int | None = 0) -> None:
        chosen = (
            ["--vars", json.dumps({"hashcdc_deletion_vectors_from_mib": deletion_vectors_from_mib})]
            if deletion_vectors_from_mib is not None
            else []
        )
        outcome = project.dbt(
            "build", *table_selector([TABLE]), *chosen, business_date=business_date
        )
        assert outcome.success, outcome.text

    def deletion_vectors() -> str:
        properties = {
            r["key"]: r["value"] for r in project.rows(f"show tblproperties {TABLE}_state")
        }
        return properties.get("delta.enableDeletionVectors", "false")

    configure(4)
    # A small state is made without deletion vectors and stays so by default (32 MiB); the
    # date that brings it to the var's size (here 0: a rerun of the same date) switches
    # them on, in a commit of its own after the date's.
    build(DATES[0], deletion_vectors_from_mib=None)
    assert deletion_vectors() == "false"
    build(DATES[0])
    assert deletion_vectors() == "true"
    assert project.rows(f"describe history {TABLE}_state limit 1")[0]["operation"] == (
        "SET TBLPROPERTIES"
    )
    build(DATES[1])
    assert _stage_partitions(project, DATES[-1]) == 4
    # Day 2's commit: the changed keys' rows, deletion vectors for the rows they replace;
    # not one unchanged row copied.
    merge = project.rows(f"describe history {TABLE}_state limit 1")[0]
    assert merge["operation"] == "MERGE"
    metrics = merge["operationMetrics"]
    assert int(metrics["numTargetRowsCopied"]) == 0
    assert int(metrics["numTargetRowsUpdated"]) + int(metrics["numTargetRowsDeleted"]) > 0
    before = _rows(project)

    configure(2)
    outcome = project.build("2023-09-02", TABLE)  # the latest date again, on 2 buckets
    assert outcome.success, outcome.text
    assert _stage_partitions(project, DATES[-1]) == 2
    assert _rows(project) == before


def test_an_invocation_that_keeps_a_stage_releases_those_of_earlier_invocations(
    spark: Any,
) -> None:
    """Each kept stage is a view whose plan is its cache alone; a later invocation's stage
    releases the earlier views and their caches."""
    from hashcdc.pipeline.session_stage import keep_stage

    def stage(rows: int) -> Any:
        return spark.range(rows).selectExpr("unhex(md5(cast(id as string))) as keyhash")

    first = [f"layout.stg_first_{n}" for n in (1, 2)]
    earlier = [keep_stage(spark, stage(10), r, "2024-05-01", 2, "invocation-1") for r in first]
    assert all(spark.catalog.tableExists(view_name(r, "2024-05-01")) for r in first)
    # Consumers plan the cache, not the lineage (session_stage._cached_leaf).
    plan = earlier[0]._jdf.queryExecution().analyzed()
    while plan.children().size() == 1 and plan.getClass().getSimpleName() != "InMemoryRelation":
        plan = plan.children().head()  # the view's own projection, if any
    assert plan.getClass().getSimpleName() == "InMemoryRelation"
    assert earlier[0].count() == 10
    manager = spark._jsparkSession.sharedState().cacheManager()

    def cached(rows: int) -> bool:
        frame = stage(rows).repartition(2, "keyhash")
        return bool(manager.lookupCachedData(frame._jdf).isDefined())

    assert cached(10)

    kept = keep_stage(spark, stage(20), "layout.stg_second", "2024-05-02", 2, "invocation-2")
    assert kept.count() == 20
    assert kept.rdd.getNumPartitions() == 2
    assert not any(spark.catalog.tableExists(view_name(r, "2024-05-01")) for r in first)
    assert spark.catalog.tableExists(view_name("layout.stg_second", "2024-05-02"))
    assert not cached(10)
    assert cached(20)


def test_a_rerun_keeps_the_stage_of_the_files_as_they_are_now(spark: Any, tmp_path: Path) -> None:
    """A date run again after its extract was replaced reads the new file, not the cache of
    the run before (the two stages' plans are the same: same path, same options)."""
    from hashcdc.pipeline.session_stage import keep_stage

    extract = tmp_path / "extract.csv"

    def stage() -> Any:
        rows = spark.read.option("header", True).csv(str(extract))
        return rows.selectExpr("unhex(md5(id)) as keyhash", "id")

    extract.write_text("id\n1\n2\n")
    first = keep_stage(spark, stage(), "layout.stg_rerun", "2024-05-03", 2, "invocation-1")
    assert sorted(row["id"] for row in first.collect()) == ["1", "2"]
    extract.write_text("id\n1\n2\n3\n")
    again = keep_stage(spark, stage(), "layout.stg_rerun", "2024-05-03", 2, "invocation-2")
    assert sorted(row["id"] for row in again.collect()) == ["1", "2", "3"]
