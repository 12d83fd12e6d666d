"""Sessions held side by side (``hashcdc.runtime.sessions``) read what the others wrote.

dbt's threads run nodes in sibling sessions of the process's; a session keeps the tables it
resolved, with their files. A partitioned parquet table (a rejects or changelog table)
rewritten in one session must read its new files in every other, the process's too.
"""

from __future__ import annotations

from typing import Any

from hashcdc.runtime.sessions import hold


def dates(session: Any, table: str) -> list[tuple[str, int]]:
    rows = session.sql(f"select cast(d as string) d, v from {table} order by d").collect()
    return [(row["d"], row["v"]) for row in rows]


def test_a_table_rewritten_in_a_sibling_reads_anew_in_the_others(spark: Any) -> None:
    table = "sessions_rewritten"
    # A sibling made (or last handed out) while the process's session was in another
    # database is handed out in the process's current one.
    home = spark.catalog.currentDatabase()
    spark.sql("create database if not exists sessions_elsewhere")
    spark.catalog.setCurrentDatabase("sessions_elsewhere")
    try:
        first, second = hold(spark), hold(spark)
        assert second.session.catalog.currentDatabase() == "sessions_elsewhere"
        second.give_back()
        first.give_back()
    finally:
        spark.catalog.setCurrentDatabase(home)
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (v int, d date) using parquet partitioned by (d)")
    spark.sql(f"insert into {table} values (1, date'2024-03-01'), (2, date'2024-03-02')")
    first = hold(spark)
    second = hold(spark)
    try:
        assert first.session is spark and second.session is not spark
        # Both resolve the table (and list its files) before the other writes it.
        assert dates(first.session, table) == dates(second.session, table)
        second.session.sql(
            f"insert overwrite table {table} partition (d) values (3, date'2024-03-02')"
        )
        second.session.sql(f"alter table {table} drop partition (d = date'2024-03-01')")
    finally:
        second.give_back()
        first.give_back()
    assert dates(spark, table) == [("2024-03-02", 3)]
    again = hold(spark)
    try:
        assert dates(again.session, table) == [("2024-03-02", 3)]
    finally:
        again.give_back()
    # And the other way: a sibling given out reads what the process's session wrote since
    # it last read (hashcdc's own code writes there outside any connection).
    first, second = hold(spark), hold(spark)
    first.give_back()
    assert dates(second.session, table) == [("2024-03-02", 3)]
    second.give_back()
    spark.sql(f"insert overwrite table {table} partition (d) values (4, date'2024-03-02')")
    first, again = hold(spark), hold(spark)
    try:
        # The process's session is handed out first, the sibling after it.
        assert first.session is spark and again.session is second.session
        assert dates(again.session, table) == [("2024-03-02", 4)]
    finally:
        again.give_back()
        first.give_back()
    spark.sql(f"drop table {table}")
    spark.sql("drop database sessions_elsewhere")
