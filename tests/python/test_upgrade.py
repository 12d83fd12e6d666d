"""A warehouse of the parquet layout (a state snapshot per date) upgraded to Delta states.

The old layout is built from a real run's rows, as the release before issue 26 wrote
them: a parquet state partitioned by business date (each partition the whole state of its
date, deleted keys once as D rows), bucketed by keyhash. The next date's run converts it
by itself, in one commit that carries the latest date; current and history then equal a
pure-Python oracle on every date, and `hashcdc upgrade` finds nothing left to do.
"""

from __future__ import annotations

from typing import Any

from oracle import apply_extract

from hashcdc.cli import main
from hashcdc.versions import applied_versions

NAME = "upgraded"
DATES = ("2024-03-01", "2024-03-02", "2024-03-03")
COLUMNS = ["id", "name", "score"]


def extract(day: int) -> list[dict[str, Any]]:
    """30 rows, then each date deletes one, changes two and adds one."""
    rows = {i: {"id": i, "name": f"n{i}", "score": i} for i in range(30)}
    for date in range(1, day):
        rows.pop(date * 3, None)
        for i in (date * 3 + 1, date * 3 + 2):
            rows[i] = {"id": i, "name": f"n{i} d{date}", "score": i + date}
        rows[100 + date] = {"id": 100 + date, "name": f"new {date}", "score": date}
    return list(rows.values())


def cli(project: Any, *args: str) -> int:
    return main(["--project-dir", str(project.root), *args])


def old_layout_select(state: str, version: int, business_date: str, history: str) -> str:
    """A date's partition as the parquet layout held it: the state with that date's
    operations (N where the date did not touch the key), and its deleted keys as D rows."""
    names = ", ".join(COLUMNS)
    return (
        f"select {names}, keyhash, nonkeyhash, if(business_date = date'{business_date}', "
        "operation, 'N') as operation, eff_start_date, "
        f"date'{business_date}' as seen_date, date'{business_date}' as business_date "
        f"from {state} version as of {version} where operation in ('I', 'U', 'N', 'X') "
        f"union all select {names}, keyhash, nonkeyhash, operation, eff_start_date, "
        f"business_date as seen_date, business_date from {history} "
        f"where business_date = date'{business_date}' and operation = 'D'"
    )


def test_a_parquet_state_is_upgraded_by_the_next_run_and_history_is_kept(project: Any) -> None:
    project.add_table(
        {
            "name": NAME,
            "extract_type": "full",
            "source": {"path": f"landing/{NAME}/{{business_date}}.csv"},
            "columns": [
                {"name": "id", "type": "int", "key": True},
                {"name": "name", "type": "string"},
                {"name": "score", "type": "int"},
            ],
        }
    )
    for day, business_date in enumerate(DATES, start=1):
        project.write_csv(
            f"landing/{NAME}/{business_date}.csv",
            COLUMNS,
            [[r[c] for c in COLUMNS] for r in extract(day)],
        )
    assert cli(project, "run", "--date", *DATES[:2], "--select", NAME) == 0

    # The state of the earlier release, from the same rows.
    spark, state, history = project.spark, f"{NAME}_state", f"{NAME}_history"
    versions = applied_versions(spark, state)
    partitions = " union all ".join(
        old_layout_select(state, v.version, v.business_date, history) for v in versions
    )
    spark.sql(
        f"create table {state}_old using parquet partitioned by (business_date) "
        "clustered by (keyhash) into 2 buckets "
        f"tblproperties ('hashcdc.hash_version' = '2') as {partitions}"
    )
    spark.sql(f"drop table {state}")
    spark.sql(f"alter table {state}_old rename to {state}")
    assert spark.sql(f"show partitions {state}").count() == 2

    assert cli(project, "run", "--date", DATES[2], "--select", NAME) == 0
    assert [v.business_date for v in applied_versions(spark, state)] == list(DATES[1:])
    assert cli(project, "upgrade") == 0

    oracle_state: dict = {}
    for day, business_date in enumerate(DATES, start=1):
        oracle_state, changes = apply_extract(
            oracle_state, extract(day), business_date, ["id"], ["name", "score"], "full"
        )
        got = project.rows(
            f"select id, name, score, operation from {history} "
            f"where business_date = date'{business_date}'"
        )
        assert sorted(tuple(r.values()) for r in got) == sorted(
            (v.row["id"], v.row["name"], v.row["score"], v.operation) for v in changes
        ), business_date
    current = project.rows(f"select id, name, score, operation from {NAME}_current")
    assert sorted(tuple(r.values()) for r in current) == sorted(
        (v.row["id"], v.row["name"], v.row["score"], v.operation) for v in oracle_state.values()
    )
