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

Beside them, the **group** form (issue 65: table groups) at 1, 10 and 100 members of
1,000 rows each, of different shapes: the members' extracts are one ``union all`` of
their own projections onto the group's typed *slots* (a member's columns take the slots
of their type family in order, so a row is as wide as the widest member, not as the sum
of the members), one diff joined on ``(table_name, keyhash)``, one ``MERGE`` of the group's
state, its history's date replaced from that commit's change data feed, one count per
member: a group's date in the merge form's statements, whatever its number of members.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
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


# The group form's slots: a member's columns take those of their family in order.
GROUP_SLOTS = {"bigint": ["b1", "b2", "b3", "b4", "b5"], "double": ["d1"], "string": ["s1"],
               "date": ["t1"]}  # fmt: skip
GROUP_COLUMNS = "table_name string, keyhash string, nonkeyhash string, operation string, " + (
    ", ".join(f"{slot} {family}" for family, slots in GROUP_SLOTS.items() for slot in slots)
)
GROUP_SIZES = (1, 10, 100)


def _member_extract(day: int, member: int) -> str:
    """A member's full extract as its own projection onto the slots (a shape of its own)."""
    first, extra = 10 * day, member % 5
    values = {"b1": "id", "d1": "cast(id * 1.5 as double)", "s1": f"concat('m{member}-', id)"}
    values |= {f"b{i + 2}": f"id * {i + 2}" for i in range(extra - 1)}
    if member % 2:
        values["t1"] = "date_add(date'2020-01-01', cast(id % 1000 as int))"
    slots = [slot for family in GROUP_SLOTS.values() for slot in family]
    payload = ", ".join(f"{values.get(slot, 'null')} as {slot}" for slot in slots)
    return f"""
        select
            'm{member:04d}' as table_name,
            sha2(cast(id as string), 256) as keyhash,
            sha2(concat(cast(id as string), '|', cast(if(id % 33 = {day} % 33, {day}, 0)
                as string)), 256) as nonkeyhash,
            {payload}
        from range({first}, {first + ROWS})
    """


def _scanned_extract(day: int, members: int) -> str:
    """The members' extracts as one scan, the member a column of each row (same rows)."""
    first = 10 * day
    return f"""
        with scanned as (
            select cast(id div {ROWS} as int) as member, {first} + id % {ROWS} as id
            from range(0, {members * ROWS})
        )
        select
            format_string('m%04d', member) as table_name,
            sha2(cast(id as string), 256) as keyhash,
            sha2(concat(cast(id as string), '|', cast(if(id % 33 = {day} % 33, {day}, 0)
                as string)), 256) as nonkeyhash,
            id as b1,
            if(member % 5 > 1, id * 2, null) as b2,
            if(member % 5 > 2, id * 3, null) as b3,
            if(member % 5 > 3, id * 4, null) as b4,
            cast(null as bigint) as b5,
            cast(id * 1.5 as double) as d1,
            concat('m', member, '-', id) as s1,
            if(member % 2 = 1, date_add(date'2020-01-01', cast(id % 1000 as int)), null) as t1
        from scanned
    """


def _group_date(spark: Any, day: int, members: int, scanned: bool = False) -> None:
    name = f"group_{'scan_' if scanned else ''}{members}"
    state, history = f"{SCHEMA}.{name}_state", f"{SCHEMA}.{name}_history"
    slots = [slot for family in GROUP_SLOTS.values() for slot in family]
    extract = (
        _scanned_extract(day, members)
        if scanned
        else " union all ".join(_member_extract(day, member) for member in range(members))
    )
    spark.sql(extract).createOrReplaceTempView("incoming")
    payload = ",\n".join(f"coalesce(incoming.{s}, state.{s}) as {s}" for s in slots)
    spark.sql(
        f"""
        merge into {state} as target
        using (
            select
                coalesce(incoming.table_name, state.table_name) as table_name,
                coalesce(incoming.keyhash, state.keyhash) as keyhash,
                coalesce(incoming.nonkeyhash, state.nonkeyhash) as nonkeyhash,
                case
                    when state.keyhash is null then 'I'
                    when incoming.keyhash is null then 'D'
                    when incoming.nonkeyhash != state.nonkeyhash then 'U'
                    else 'N'
                end as operation,
                {payload},
                date_add(date'2024-01-01', {day}) as business_date
            from incoming
            full outer join {state} as state
                on incoming.table_name = state.table_name and incoming.keyhash = state.keyhash
        ) as source
        on target.table_name = source.table_name and target.keyhash = source.keyhash
        when matched and source.operation = 'D' then delete
        when matched and source.operation = 'U' then update set *
        when not matched and source.operation != 'D' then insert *
        """
    )
    version = spark.sql(f"describe history {state} limit 1").first()["version"]
    spark.sql(
        f"""
        insert into {history} replace where business_date = date_add(date'2024-01-01', {day})
        select table_name, keyhash, nonkeyhash, if(_change_type = 'delete', 'D', operation),
            {", ".join(slots)}, date_add(date'2024-01-01', {day})
        from table_changes('{state}', {version}, {version})
        where _change_type in ('insert', 'update_postimage', 'delete')
        """
    )
    spark.sql(f"select table_name, count(*) from {state} group by table_name").collect()


def _jobs(spark: Any, group: str) -> int:
    """The Spark jobs run under a job group (the status store keeps the latest 1,000)."""
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def _form(
    spark: Any, name: str, date: Callable[[Any, int], None], columns: str = COLUMNS
) -> dict[str, Any]:
    spark.sql(f"drop table if exists {SCHEMA}.{name}_state")
    spark.sql(f"drop table if exists {SCHEMA}.{name}_history")
    feed = "tblproperties (delta.enableChangeDataFeed = true)" if name != "lean" else ""
    spark.sql(
        f"create table {SCHEMA}.{name}_state ({columns}, business_date date) using delta {feed}"
    )
    spark.sql(
        f"create table {SCHEMA}.{name}_history ({columns}, business_date date) using delta "
        "partitioned by (business_date)"
    )
    seconds, jobs = [], []
    for day in range(1, DATES + 1):
        if columns == COLUMNS:  # the group form makes its members' extracts itself
            _extract(spark, day).createOrReplaceTempView("incoming")
        group = f"{name}_{day}"
        spark.sparkContext.setJobGroup(group, group)
        started = time.perf_counter()
        date(spark, day)
        if day >= WARM_FROM:
            seconds.append(time.perf_counter() - started)
            jobs.append(_jobs(spark, group))
    return {
        "date_s_median": round(statistics.median(seconds), 2),
        "date_s_min": round(min(seconds), 2),
        "jobs_median": int(statistics.median(jobs)),
        "jobs_min": min(jobs),
    }


def measure(project_dir: Path, groups: tuple[int, ...] = GROUP_SIZES) -> dict[str, Any]:
    """The forms in one session of ``project_dir``'s profile; the scratch schema dropped."""
    spark = spark_session(project_dir)
    spark.sql(f"create database if not exists {SCHEMA}")
    try:
        figures = {name: _form(spark, name, date) for name, date in
                   (("merge", _merge_date), ("lean", _lean_date))}  # fmt: skip
        for members in groups:
            for scanned in (False, True):
                name = f"group_{'scan_' if scanned else ''}{members}"
                date = partial(_group_date, members=members, scanned=scanned)
                figures[name] = _form(spark, name, date, GROUP_COLUMNS)
        return figures
    finally:
        spark.sql(f"drop database if exists {SCHEMA} cascade")


if __name__ == "__main__":
    sizes = tuple(int(n) for n in sys.argv[3].split(",")) if len(sys.argv) > 3 else GROUP_SIZES
    Path(sys.argv[2]).write_text(json.dumps(measure(Path(sys.argv[1]), sizes), indent=2) + "\n")
