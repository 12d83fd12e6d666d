"""The floor of a small table-date on Spark and Delta: no dbt, no extract, no checks.

``hashcdc bench --engine`` runs this in a process of its own, with the scratch project's
profile (the same Spark settings, jars and warehouse), beside the commands it times. A
1,000-row full table (keys, two hashes and a value, generated in the JVM: no file read)
gets twelve dates, 3% of its keys changed and 1% replaced a date, in two forms:

- **merge**: today's shape of a date without dbt: the diff joined against the state in
  a Delta ``MERGE``, the history's date replaced from the commit's change data feed,
  one count of the state (the one scan a check makes);
- **lean**: the design that issue 44 names: the diff computed once and kept
  (``localCheckpoint``), the counts taken from it, the state rewritten from it in one
  ``insert overwrite`` (a small state needs no MERGE), the history's date replaced from it.

Each form's dates 4-12 (the session warm, a log checkpoint among them) give the median
wall time and Spark jobs of a date: what any design of a table-date built of Delta
statements costs here before dbt, the extract and the checks add theirs.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hashcdc.runtime.project import spark_session

ROWS = 1_000
DATES = 12
WARM_FROM = 4
SCHEMA = "bench_floor"
COLUMNS = "k bigint, keyhash string, nonkeyhash string, v double, operation string"


def _extract(spark: Any, day: int) -> Any:
    """Day ``day``'s full extract: keys shift by 10 a day; every 33rd key's values change."""
    first = 10 * day
    return spark.sql(
        f"""
        select
            id as k,
            sha2(cast(id as string), 256) as keyhash,
            sha2(concat(cast(id as string), '|', cast(if(id % 33 = {day} % 33, {day}, 0)
                as string)), 256) as nonkeyhash,
            cast(id * 1.5 as double) as v
        from range({first}, {first + ROWS})
        """
    )


def _diff(state: str, day: int) -> str:
    """The date's diff against the state: one row per key, tagged I, U, D or N."""
    return f"""
        select
            coalesce(incoming.k, state.k) as k,
            coalesce(incoming.keyhash, state.keyhash) as keyhash,
            coalesce(incoming.nonkeyhash, state.nonkeyhash) as nonkeyhash,
            coalesce(incoming.v, state.v) as v,
            case
                when state.keyhash is null then 'I'
                when incoming.keyhash is null then 'D'
                when incoming.nonkeyhash != state.nonkeyhash then 'U'
                else 'N'
            end as operation,
            date_add(date'2024-01-01', {day}) as business_date
        from incoming
        full outer join {state} as state
            on incoming.keyhash = state.keyhash
    """


def _merge_date(spark: Any, day: int) -> None:
    state, history = f"{SCHEMA}.merge_state", f"{SCHEMA}.merge_history"
    spark.sql(
        f"""
        merge into {state} as target
        using ({_diff(state, day)}) as source
        on target.keyhash = source.keyhash
        when matched and source.operation = 'D' then delete
        when matched and source.operation = 'U' then update set *
        when not matched and source.operation != 'D' then insert *
        """
    )
    version = spark.sql(f"describe history {state} limit 1").first()["version"]
    spark.sql(
        f"""
        insert into {history} replace where business_date = date_add(date'2024-01-01', {day})
        select k, keyhash, nonkeyhash, v, if(_change_type = 'delete', 'D', operation),
            date_add(date'2024-01-01', {day})
        from table_changes('{state}', {version}, {version})
        where _change_type in ('insert', 'update_postimage', 'delete')
        """
    )
    spark.sql(f"select count(*) from {state}").collect()


def _lean_date(spark: Any, day: int) -> None:
    state, history = f"{SCHEMA}.lean_state", f"{SCHEMA}.lean_history"
    diff = spark.sql(_diff(state, day)).localCheckpoint()
    diff.createOrReplaceTempView("diff")
    diff.groupBy("operation").count().collect()
    spark.sql(f"insert overwrite {state} select * from diff where operation != 'D'")
    spark.sql(
        f"""
        insert into {history} replace where business_date = date_add(date'2024-01-01', {day})
        select * from diff where operation in ('I', 'U', 'D')
        """
    )


def _jobs(spark: Any) -> int:
    """Spark jobs this application has run (its status store keeps them without a UI)."""
    return int(spark.sparkContext._jsc.sc().statusStore().jobsList(None).size())


def _form(spark: Any, name: str, date: Callable[[Any, int], None]) -> dict[str, Any]:
    spark.sql(f"drop table if exists {SCHEMA}.{name}_state")
    spark.sql(f"drop table if exists {SCHEMA}.{name}_history")
    feed = "tblproperties (delta.enableChangeDataFeed = true)" if name == "merge" else ""
    spark.sql(
        f"create table {SCHEMA}.{name}_state ({COLUMNS}, business_date date) using delta {feed}"
    )
    spark.sql(
        f"create table {SCHEMA}.{name}_history ({COLUMNS}, business_date date) using delta "
        "partitioned by (business_date)"
    )
    seconds, jobs = [], []
    for day in range(1, DATES + 1):
        _extract(spark, day).createOrReplaceTempView("incoming")
        before, started = _jobs(spark), time.perf_counter()
        date(spark, day)
        if day >= WARM_FROM:
            seconds.append(time.perf_counter() - started)
            jobs.append(_jobs(spark) - before)
    return {
        "date_s_median": round(statistics.median(seconds), 2),
        "date_s_min": round(min(seconds), 2),
        "jobs_median": int(statistics.median(jobs)),
        "jobs_min": min(jobs),
    }


def measure(project_dir: Path) -> dict[str, Any]:
    """Both forms in one session of ``project_dir``'s profile; the scratch schema dropped."""
    spark = spark_session(project_dir)
    spark.sql(f"create database if not exists {SCHEMA}")
    try:
        return {name: _form(spark, name, date) for name, date in
                (("merge", _merge_date), ("lean", _lean_date))}  # fmt: skip
    finally:
        spark.sql(f"drop database if exists {SCHEMA} cascade")


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(json.dumps(measure(Path(sys.argv[1])), indent=2) + "\n")
