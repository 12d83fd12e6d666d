"""``hashcdc extract``: a live PostgreSQL table's snapshot becomes a business date's extract.

A real PostgreSQL server (the session's private one) holds the source table; the command
reads it through Spark's JDBC source in parallel ranges and lands it where the table's
extracts land; ``dbt build`` then diffs it like any delivered extract.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from source_configs import SOURCE_DATABASE, extracted_config

from hashcdc.cli import main

TABLE = "extracted_customers"


@pytest.fixture
def shop(postgres: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A database of the server with a customers table of its own (a name per test)."""
    if SOURCE_DATABASE not in postgres.psql("select datname from pg_database").split():
        postgres.psql(f"create database {SOURCE_DATABASE}")
    name = f"customers_{uuid.uuid4().hex[:8]}"
    postgres.psql(
        f"create table public.{name} (id int primary key, name text, balance numeric(12,2), "
        f"born date); insert into public.{name} values "
        "(1, 'Ann', 10.50, '1990-01-02'), (2, 'Bob', null, null), (3, 'Cy', 3.00, '1985-05-05')",
        SOURCE_DATABASE,
    )
    monkeypatch.setenv("SHOP_USER", "hashcdc")
    return name


def _extract(project: Any, business_date: str, *options: str) -> int:
    return main(
        ["--project-dir", str(project.root), "extract", TABLE, "--date", business_date, *options]
    )


def test_snapshots_land_as_extracts_and_run(
    project: Any, postgres: Any, shop: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project.add_table(extracted_config(postgres.port, shop, TABLE))
    assert _extract(project, "2024-01-01") == 0
    assert f"table '{TABLE}': landed 3 rows for 2024-01-01" in capsys.readouterr().out
    assert project.build("2024-01-01", TABLE).success

    postgres.psql(
        f"update {shop} set balance = 11.00 where id = 1; delete from {shop} where id = 2; "
        f"insert into {shop} values (4, 'Dee', 4.25, '2001-01-01')",
        SOURCE_DATABASE,
    )
    assert _extract(project, "2024-01-02") == 0
    outcome = project.build("2024-01-02", TABLE)
    assert outcome.success, outcome.text
    current = project.rows(
        f"select customer_id, cast(balance as string) as balance, operation from {TABLE}_current"
    )
    assert {row["customer_id"]: (row["balance"], row["operation"]) for row in current} == {
        1: ("11.00", "U"),
        3: ("3.00", "N"),
        4: ("4.25", "I"),
    }
    deleted = project.rows(
        f"select customer_id from {TABLE}_history "
        "where business_date = '2024-01-02' and operation = 'D'"
    )
    assert [row["customer_id"] for row in deleted] == [2]

    # The date is there: a second extract is refused, nothing read; --replace lands it again.
    assert _extract(project, "2024-01-02") == 2
    assert "is already at" in capsys.readouterr().err
    assert _extract(project, "2024-01-02", "--replace") == 0


def test_a_mariadb_table_lands_as_an_extract_and_runs(
    project: Any, mariadb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MariaDB through its JDBC driver (Spark's MySQL dialect): one consistent read."""
    name = f"customers_{uuid.uuid4().hex[:8]}"
    mariadb.sql(f"create database if not exists {SOURCE_DATABASE}")
    mariadb.sql(
        f"create table {name} (id int primary key, name text, balance decimal(12,2), "
        f"born date, vip boolean); insert into {name} values (1, 'Ann', 10.50, '1990-01-02', "
        "1), (2, 'Bob', null, null, 0), (3, 'Cy', 3.00, '1985-05-05', null)",
        SOURCE_DATABASE,
    )
    monkeypatch.setenv("SHOP_USER", "hashcdc")
    config = extracted_config(mariadb.port, name, TABLE)
    database = config["source"]["database"]
    del database["partition_column"], database["partitions"]
    database.update(kind="mariadb", table=name)
    config["columns"].append({"name": "vip", "type": "boolean"})
    project.add_table(config)
    assert _extract(project, "2024-01-01") == 0
    outcome = project.build("2024-01-01", TABLE)
    assert outcome.success, outcome.text
    current = project.rows(
        f"select customer_id, name, cast(balance as string) as balance, born, vip "
        f"from {TABLE}_current"
    )
    assert {row["customer_id"]: (row["name"], row["balance"], str(row["born"]), row["vip"])
            for row in current} == {
        1: ("Ann", "10.50", "1990-01-02", True),
        2: ("Bob", None, "None", False),
        3: ("Cy", "3.00", "1985-05-05", None),
    }  # fmt: skip


def test_the_parallel_reads_share_one_snapshot(project: Any, postgres: Any, shop: str) -> None:
    """A change committed after the snapshot is taken is not in the rows, whichever range."""
    from hashcdc.capture.snapshot import read_snapshot
    from hashcdc.config import parse_table_config

    table, problems = parse_table_config(
        extracted_config(postgres.port, shop, TABLE), f"tables/{TABLE}.yml"
    )
    assert table is not None, problems
    frame, snapshot = read_snapshot(project.spark, table)
    try:
        assert frame.rdd.getNumPartitions() == 2
        # Committed by another session after the snapshot was exported, before any read.
        postgres.psql(
            f"update {shop} set balance = 99.00; insert into {shop} values (5, 'Eve', 5, null)",
            SOURCE_DATABASE,
        )
        rows = {row["id"]: str(row["balance"]) for row in frame.collect()}
    finally:
        snapshot.close()
    assert rows == {1: "10.50", 2: "None", 3: "3.00"}


def test_missing_credentials_are_named(
    project: Any, postgres: Any, shop: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    project.add_table(extracted_config(postgres.port, shop, TABLE))
    monkeypatch.delenv("SHOP_USER")
    assert _extract(project, "2024-01-01") == 2
    err = capsys.readouterr().err
    assert "the environment variable SHOP_USER (source.database.user_env in" in err
    assert "Traceback" not in err
