"""File layout: a table's own bucket count, and a change of it rewriting the state once."""

from __future__ import annotations

from typing import Any

import yaml
from servers import snapshot_sql

from hashcdc import datagen, generate
from hashcdc.config import load_table_configs

DATES = ["2023-09-01", "2023-09-02", "2023-09-03"]
TABLE, TWIN = "lay_rebucket", "lay_twin"


def _files_per_snapshot(project: Any, table: str) -> dict[str, int]:
    rows = project.rows(
        f"select cast(business_date as string) as business_date, "
        f"count(distinct _metadata.file_path) as files from {table}_state group by business_date"
    )
    return {row["business_date"]: row["files"] for row in rows}


def _buckets(project: Any, table: str) -> int:
    details = {r["col_name"]: r["data_type"] for r in project.rows(f"describe extended {table}")}
    return int(details["Num Buckets"])


def test_a_new_bucket_count_rewrites_the_state_and_changes_no_row(project: Any) -> None:
    options = datagen.DatagenOptions(
        table_name=TABLE, initial_records=2000, dates=DATES, seed=3, key_columns=2
    )
    datagen.generate_extracts(project.spark, options, project.root)
    config_file = project.root / "tables" / f"{TABLE}.yml"
    config = yaml.safe_load(config_file.read_text())
    # The twin reads the same extracts with the project's default bucket count.
    (project.root / "tables" / f"{TWIN}.yml").write_text(yaml.safe_dump(config | {"name": TWIN}))

    def configure(buckets: int) -> None:
        config_file.write_text(yaml.safe_dump(config | {"buckets": buckets}))
        generate.write(project.root, load_table_configs(project.root / "tables"))

    configure(4)
    for business_date in DATES[:2]:
        outcome = project.build(business_date, TABLE, TWIN)
        assert outcome.success, outcome.text
    assert (_buckets(project, f"{TABLE}_state"), _buckets(project, f"{TWIN}_state")) == (4, 8)
    assert set(_files_per_snapshot(project, TABLE).values()) == {4}

    configure(2)
    outcome = project.build(DATES[2], TABLE, TWIN)
    assert outcome.success, outcome.text
    assert _buckets(project, f"{TABLE}_state") == 2
    assert _buckets(project, f"stg_{TABLE}") == 2
    # Every kept snapshot was rewritten: one file per bucket.
    assert _files_per_snapshot(project, TABLE) == dict.fromkeys(DATES, 2)

    def rows(table: str) -> list[tuple[str, str]]:
        relations = [f"{table}_current", f"{table}_history"]
        found = project.spark.sql(snapshot_sql(relations)).collect()
        return sorted((r.relation.removeprefix(table), r.row) for r in found)

    assert rows(TABLE) == rows(TWIN)
    assert not project.spark.catalog.tableExists(f"{TABLE}_state__hashcdc_rewrite")
