"""``hashcdc bench``'s engine and many-tables reports: jobs per table, the floor, the peer."""

from __future__ import annotations

from hashcdc.bench.engine import jobs_per_table, markdown
from hashcdc.bench.tables import markdown as tables_markdown

PROFILE = """# hashcdc run profile (20.0 s in dbt, parse included; 95 Spark jobs, \
2 of them outside any node)

| dbt node | seconds | Spark jobs | Spark stages | stage seconds |
| --- | ---: | ---: | ---: | ---: |
| stg_bench_full | 1.00 | 6 | 6 | 0.20 |
| bench_full_state | 2.00 | 17 | 17 | 0.80 |
| stg_bench_delta | 1.00 | 6 | 6 | 0.20 |
| bench_feed_state | 3.00 | 34 | 34 | 3.00 |
| bench-on-run-end-0 | 1.00 | 4 | 4 | 0.20 |
"""


def test_a_table_gets_its_nodes_jobs_and_a_share_of_the_rest() -> None:
    # The hook's 4 jobs and the 2 outside any node are shared out: 2 a table.
    assert jobs_per_table(PROFILE) == {"bench_full": 25, "bench_delta": 8, "bench_feed": 36}


def test_the_report_puts_the_floor_beside_the_commands() -> None:
    figures = {
        "cold_engine_first_date_s": 30.0,
        "warm_date_s": [10.0, 9.0],
        "no_engine_date_s": 35.0,
        "warm_status_s": 0.8,
        "warm_query_s": 0.9,
        "jobs_per_table_date": {"bench_full": 57},
        "floor": {
            "merge": {"date_s_median": 2.8, "jobs_median": 23},
            "lean": {"date_s_median": 1.45, "jobs_median": 16},
        },
    }
    table = markdown(figures)
    assert "| Spark jobs of a table-date: bench_full (full) | 57 | ≤ 15 |" in table
    assert "no dbt (lean form)" in table and "| 1.45 s, 16 jobs |" in table
    assert "no dbt (merge form)" in table and "| 2.8 s, 23 jobs |" in table


def test_the_many_tables_report_puts_day_two_beside_the_peer_and_the_target() -> None:
    figures = {
        "tables": 100,
        "rows": 1_000,
        "day1_s": 400.0,
        "day2_s": 350.5,
        "peer_day1_s": 40.0,
        "peer_day2_s": 45.25,
        "current_rows": 1_000,
        "peer_current_rows": 1_000,
    }
    table = tables_markdown(figures)
    assert (
        "| 100 tables of 1,000 rows, day 2 (4% changed) | 350.5 s | 45.25 s | ≤ dbt-duckdb |"
        in (table)
    )
    assert "| current rows of bench_t000 | 1,000 | 1,000 | equal |" in table
    assert "dbt-spark" not in table


def test_the_many_tables_report_puts_a_table_date_beside_dbt_spark_per_table() -> None:
    # hashcdc's 100 tables against the dbt-spark peer's 20: each per table.
    figures = {
        "tables": 100,
        "rows": 1_000,
        "day1_s": 80.0,
        "day2_s": 35.0,
        "peer_day1_s": 14.0,
        "peer_day2_s": 20.0,
        "current_rows": 1_010,
        "peer_current_rows": 1_010,
        "spark_peer_tables": 20,
        "spark_peer_day1_s": 200.0,
        "spark_peer_day2_s": 250.0,
        "spark_peer_current_rows": 1_010,
    }
    table = tables_markdown(figures)
    assert "| day 1 | 0.80 s | 10.00 s (0.08×) | — |" in table
    assert "| day 2 | 0.35 s | 12.50 s (0.03×) | ≤ 0.1× dbt-spark |" in table
    assert "dbt-spark: 20 of the tables" in table
    assert table.count("| current rows of bench_t000 | 1,010 | 1,010 | equal |") == 2
