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


# Timestamps a warehouse holds every day, far from today: INT96 wraps or clamps them in
# readers other than Spark (delta-rs, pyarrow, polars).
EDGE_TIMES = {
    1: "9999-12-31 23:59:59",
    2: "1000-06-15 12:00:00",
    3: "1677-09-21 00:12:44",
    4: "2262-04-12 00:00:00",
    5: "2024-03-01 10:00:00.123456",
}


def _read_outside_spark(path: str, history: bool) -> dict[int, str]:
    """The table's timestamps as polars (on delta-rs) reads them: id -> ISO text."""
    import polars as pl

    frame = pl.read_parquet(f"{path}/**/*.parquet") if history else pl.read_delta(path)
    if not history:
        frame = frame.filter(pl.col("operation").is_in(["I", "U", "N", "X"]))
    return {
        row["id"]: row["at"].replace(tzinfo=None).isoformat(sep=" ")
        for row in frame.select("id", "at").to_dicts()
    }


def test_int96_timestamps_are_rewritten_and_read_right_outside_spark(
    project: Any, capsys: Any
) -> None:
    """Issue 42: a warehouse whose files hold INT96 timestamps (Spark's default before it)
    is rewritten by `hashcdc upgrade` with INT64 ones, rows and versions kept; polars
    (delta-rs) then reads the edge timestamps as Spark does."""
    from hashcdc.evolve import rewrite_parquet
    from hashcdc.upgrade import _is_int96

    name = "int96"
    project.add_table(
        {
            "name": name,
            "extract_type": "full",
            "source": {"path": f"landing/{name}/{{business_date}}.csv"},
            "columns": [
                {"name": "id", "type": "int", "key": True},
                {"name": "at", "type": "timestamp"},
            ],
        }
    )
    spark, state, history = project.spark, f"{name}_state", f"{name}_history"
    rows = [[key, value] for key, value in EDGE_TIMES.items()]
    project.write_csv(f"landing/{name}/{DATES[0]}.csv", ["id", "at"], rows)
    assert cli(project, "run", "--date", DATES[0], "--select", name) == 0
    locations = {
        table: spark.sql(f"describe detail {table}").collect()[0]["location"].removeprefix("file:")
        for table in (state, history)
    }
    # The files as the release before issue 42 wrote them: INT96 (Spark's default then),
    # and no record of the timestamps' type on the state.
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        spark.table(state).write.format("delta").mode("overwrite").option(
            "dataChange", "false"
        ).save(locations[state])
        rewrite_parquet(spark, history, [f"`{c}`" for c in spark.table(history).columns])
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    spark.sql(f"alter table {state} unset tblproperties ('hashcdc.parquet_timestamps')")
    assert all(_is_int96(spark, f) for t in (state, history) for f in spark.table(t).inputFiles())
    assert _read_outside_spark(locations[state], False) != EDGE_TIMES  # wrapped, clamped

    assert cli(project, "upgrade") == 0
    for table in (state, history):
        assert not any(_is_int96(spark, f) for f in spark.table(table).inputFiles()), table
        assert _read_outside_spark(locations[table], table == history) == EDGE_TIMES, table
    spark_rows = project.rows(f"select id, cast(at as string) as at from {name}_current")
    assert {r["id"]: r["at"] for r in spark_rows} == {
        key: value.removesuffix(".123456") + (".123456" if key == 5 else "")
        for key, value in EDGE_TIMES.items()
    }
    # The date is still in the state's log (the rewrite commits no date of its own).
    assert [v.business_date for v in applied_versions(spark, state)] == [DATES[0]]
    # `current` rebuilt without Spark or the metastore, by the documented rule (the rule's
    # untouched operation is the state's own property).
    import polars as pl
    from deltalake import DeltaTable

    delta = DeltaTable(locations[state])
    untouched = delta.metadata().configuration["hashcdc.untouched_operation"]
    rows_of_state = pl.read_delta(delta)
    latest = rows_of_state.filter(pl.col("operation") == "W")["business_date"].max()
    outside = rows_of_state.filter(pl.col("operation").is_in(["I", "U", "N", "X"])).select(
        "id",
        pl.when(pl.col("business_date") == latest)
        .then(pl.col("operation"))
        .otherwise(pl.lit(untouched))
        .alias("operation"),
    )
    inside = project.rows(f"select id, operation from {name}_current")
    assert sorted(outside.rows()) == sorted((r["id"], r["operation"]) for r in inside)
    # Done once: recorded on each table, so the next upgrade (or run) has nothing to do.
    capsys.readouterr()
    assert cli(project, "upgrade", "--select", name) == 0
    assert "nothing to do" in capsys.readouterr().out
