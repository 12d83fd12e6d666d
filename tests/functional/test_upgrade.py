"""A warehouse of an earlier layout upgraded: parquet states and histories, INT96 timestamps.

The old layout is built from a real run's rows, as the release before issue 26 wrote
them: a parquet state partitioned by business date (each partition the whole state of its
date, deleted keys once as D rows), bucketed by keyhash. The next date's run converts it
by itself, in one commit that carries the latest date; current and history then equal a
pure-Python oracle on every date, and `hashcdc upgrade` finds nothing left to do.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from oracle import apply_extract
from outside_spark import assert_readers_agree, read_outside_spark

from hashcdc.cli import main
from hashcdc.state.versions import applied_versions, is_delta

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


def as_parquet(spark: Any, table: str) -> None:
    """Make a table what a release before issue 42 (or 41) wrote: parquet, one partition
    per date, in the session's current timestamp type."""
    spark.sql(
        f"create table {table}_old using parquet partitioned by (business_date) "
        f"as select * from {table}"
    )
    spark.sql(f"drop table {table}")
    spark.sql(f"alter table {table}_old rename to {table}")


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


def test_a_parquet_state_and_history_are_upgraded_by_the_next_run(project: Any) -> None:
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
    # And its history and rejects: parquet tables, one partition per date.
    rejects = f"{NAME}_rejects"
    for dated in (history, rejects):
        as_parquet(spark, dated)

    assert cli(project, "run", "--date", DATES[2], "--select", NAME) == 0
    assert [v.business_date for v in applied_versions(spark, state)] == list(DATES[1:])
    assert is_delta(spark, history) and is_delta(spark, rejects)
    assert [v.business_date for v in applied_versions(spark, history)] == list(DATES[1:])
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


# Values a warehouse holds every day far from today (the "end of time" sentinel, old
# dates): INT96 wraps or clamps the timestamps in readers other than Spark.
EDGE_ROWS = [
    [1, "north", "9999999999.99", "9999-12-31", "9999-12-31 23:59:59", "Zürich ✓"],
    [2, "north", "-0.01", "0001-01-01", "1000-06-15 12:00:00", None],
    [3, "south", "0.00", "1582-10-15", "1677-09-21 00:12:44", ""],
    [4, "south", "12.50", "2262-04-12", "2262-04-12 00:00:00", "naïve — ünïcode"],
    [5, "east", None, None, "2024-03-01 10:00:00.123456", "x"],
]
LAKE_COLUMNS = ["id", "region", "amount", "born", "at", "note"]


def lake_extract(day: int) -> list[list[Any]]:
    """The edge rows and 40 plain ones; each date changes some, deletes one, adds one."""
    rows = {(r[0], r[1]): list(r) for r in EDGE_ROWS}
    for i in range(10, 50):
        rows[(i, "west")] = [
            i,
            "west",
            f"{i}.25",
            "2000-01-01",
            f"2024-01-01 0{i % 10}:00:00",
            f"r{i}",
        ]
    for date in range(2, day + 1):
        rows.pop((10 + date, "west"), None)
        rows[(20 + date, "west")][2] = f"{date}.75"
        rows[(date % 5 + 1, EDGE_ROWS[date % 5][1])][5] = f"changed on {date}"
        rows[(100 + date, "west")] = [
            100 + date,
            "west",
            "1.00",
            "1999-12-31",
            "1970-01-01 00:00:00",
            None,
        ]
    return list(rows.values())


def _read_outside_spark(path: str) -> dict[int, str]:
    """A state's timestamps as polars (on delta-rs) reads them: id -> ISO text."""
    import polars as pl

    frame = pl.read_delta(path).filter(pl.col("operation").is_in(["I", "U", "N", "X"]))
    return {
        row["id"]: row["at"].replace(tzinfo=None).isoformat(sep=" ")
        for row in frame.select("id", "at").to_dicts()
    }


def _query(project: Any, capsys: Any, sql: str, as_of: str | None = None) -> list[list[str]]:
    """`hashcdc query`'s CSV rows (sorted, without the header)."""
    capsys.readouterr()
    dated = ["--as-of", as_of] if as_of else []
    assert cli(project, "query", *dated, sql) == 0
    return sorted(list(csv.reader(io.StringIO(capsys.readouterr().out)))[1:])


def test_the_lake_reads_the_same_in_duckdb_polars_and_delta_rs(project: Any, capsys: Any) -> None:
    """Issue 42: a warehouse written before it (INT96 timestamps, a parquet history) is
    upgraded; after more dates, a rerun (a RESTORE in the state's log) and a compaction,
    DuckDB, polars and delta-rs — in a process without Spark — read current, history and
    the state and history as of every date as `hashcdc query` does."""
    from hashcdc.pipeline.evolution.upgrade import _is_int96

    name = "lake"
    project.add_table(
        {
            "name": name,
            "extract_type": "full",
            "source": {"path": f"landing/{name}/{{business_date}}.csv"},
            "columns": [
                {"name": "id", "type": "int", "key": True},
                {"name": "region", "type": "string", "key": True},
                {"name": "amount", "type": "decimal(12,2)"},
                {"name": "born", "type": "date"},
                {"name": "at", "type": "timestamp"},
                {"name": "note", "type": "string"},
            ],
        }
    )
    dates = ("2024-03-01", "2024-03-02", "2024-03-03", "2024-03-04")
    for day, business_date in enumerate(dates, start=1):
        project.write_csv(f"landing/{name}/{business_date}.csv", LAKE_COLUMNS, lake_extract(day))
    spark, state, history = project.spark, f"{name}_state", f"{name}_history"
    assert cli(project, "run", "--date", dates[0], "--select", name) == 0
    locations = {
        table: spark.sql(f"describe detail {table}").collect()[0]["location"].removeprefix("file:")
        for table in (state, history)
    }
    # The tables as the release before issue 42 wrote them: INT96 timestamps (Spark's
    # default then), no record of their type, and the history a parquet table.
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        spark.table(state).write.format("delta").mode("overwrite").option(
            "dataChange", "false"
        ).save(locations[state])
        as_parquet(spark, history)
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    spark.sql(f"alter table {state} unset tblproperties ('hashcdc.parquet_timestamps')")
    assert not is_delta(spark, history)
    assert all(_is_int96(spark, f) for t in (state, history) for f in spark.table(t).inputFiles())
    edge_times = {row[0]: row[4] for row in EDGE_ROWS}
    wrong = _read_outside_spark(locations[state])
    assert {k: wrong[k] for k in edge_times} != edge_times  # wrapped, clamped

    capsys.readouterr()
    assert cli(project, "upgrade") == 0
    said = capsys.readouterr().out
    assert f"{history} upgraded to a Delta table" in said and "INT64 timestamps" in said
    assert is_delta(spark, history)
    for table in (state, history):
        assert not any(_is_int96(spark, f) for f in spark.table(table).inputFiles()), table
    # Done once: recorded on each table, so the next upgrade has nothing to do.
    assert cli(project, "upgrade", "--select", name) == 0
    assert "nothing to do" in capsys.readouterr().out

    assert cli(project, "run", "--date", *dates[1:], "--select", name) == 0
    # A rerun of the latest date with an extract corrected since: the state is restored
    # to the date before it (a RESTORE commit) and the history's date replaced whole.
    corrected = lake_extract(4)
    corrected = [row for row in corrected if row[0] != 104]
    project.write_csv(f"landing/{name}/{dates[3]}.csv", LAKE_COLUMNS, corrected)
    assert cli(project, "run", "--date", dates[3], "--select", name) == 0
    operations = [r["operation"] for r in project.rows(f"describe history {state}")]
    assert "RESTORE" in operations
    history_log = project.rows(f"describe history {history}")
    assert [r["operation"] for r in history_log][:1] == ["WRITE"]
    assert '"hashcdc_business_date":"2024-03-04"' in history_log[0]["userMetadata"]
    assert cli(project, "compact", "--select", name) == 0
    assert "compacted into" in capsys.readouterr().out

    current_sql = (
        f"select id, region, amount, born, cast(at as string), note, operation from {name}_current"
    )
    history_sql = (
        f"select id, region, amount, born, cast(at as string), note, operation, business_date "
        f"from {name}_history"
    )
    expected = {
        "current": _query(project, capsys, current_sql),
        "history": _query(project, capsys, history_sql),
    }
    for business_date in dates:
        expected[f"current@{business_date}"] = _query(project, capsys, current_sql, business_date)
        expected[f"history@{business_date}"] = _query(project, capsys, history_sql, business_date)
    assert expected["history@2024-03-03"] != expected["history"]  # as of reads less

    found = read_outside_spark(
        project.root / "readers.json",
        {
            "state": locations[state],
            "history": locations[history],
            "columns": [*LAKE_COLUMNS, "operation"],
            "history_columns": [*LAKE_COLUMNS, "operation", "business_date"],
            "dates": list(dates),
        },
    )
    assert_readers_agree(found, expected)
