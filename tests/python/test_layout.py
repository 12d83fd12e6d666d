"""File layout: a table's own bucket count, and a change of it rewriting the state once."""

from __future__ import annotations

from typing import Any

import yaml
from servers import snapshot_sql

from hashcdc import datagen, generate
from hashcdc.config import load_table_configs
from hashcdc.evolve import evolve_tables

DATES = ["2023-09-01", "2023-09-02"]
TABLE = "lay_rebucket"


def _files_per_snapshot(project: Any) -> dict[str, int]:
    rows = project.rows(
        f"select cast(business_date as string) as business_date, "
        f"count(distinct _metadata.file_path) as files from {TABLE}_state group by business_date"
    )
    return {row["business_date"]: row["files"] for row in rows}


def _buckets(project: Any, table: str) -> int:
    details = {r["col_name"]: r["data_type"] for r in project.rows(f"describe extended {table}")}
    return int(details["Num Buckets"])


def _rows(project: Any) -> list[tuple[str, str]]:
    relations = [f"{TABLE}_state", f"{TABLE}_current", f"{TABLE}_history"]
    return sorted((r.relation, r.row) for r in project.spark.sql(snapshot_sql(relations)).collect())


def test_a_new_bucket_count_rewrites_the_state_and_changes_no_row(project: Any) -> None:
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

    configure(4)
    for business_date in DATES:
        outcome = project.build(business_date, TABLE)
        assert outcome.success, outcome.text
    assert (_buckets(project, f"{TABLE}_state"), _buckets(project, f"stg_{TABLE}")) == (4, 4)
    # The first snapshot too: one file per bucket, not one per task and bucket.
    assert _files_per_snapshot(project) == dict.fromkeys(DATES, 4)
    before = _rows(project)

    # What the next date's stage does before it reads anything.
    evolve_tables(project.spark, "hashcdc", configure(2))
    assert _buckets(project, f"{TABLE}_state") == 2
    assert _files_per_snapshot(project) == dict.fromkeys(DATES, 2)
    assert _rows(project) == before
    assert not project.spark.catalog.tableExists(f"{TABLE}_state__hashcdc_rewrite")
    outcome = project.build("2023-09-02", TABLE)  # the latest date again, on 2 buckets
    assert outcome.success, outcome.text
    assert _buckets(project, f"stg_{TABLE}") == 2
    assert _rows(project) == before
