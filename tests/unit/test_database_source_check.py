"""A table extracted from a database: its config checked (no server, no Spark)."""

from __future__ import annotations

from source_configs import extracted_config

TABLE = "extracted_customers"


def test_a_database_source_is_checked_with_the_config() -> None:
    from hashcdc.config import TableConfig, parse_table_config

    config = extracted_config(5432, "customers", TABLE)
    table, problems = parse_table_config(config, f"tables/{TABLE}.yml")
    assert problems == [] and table is not None
    assert TableConfig.from_dict(table.to_dict()) == table
    database = config["source"]["database"]
    wrong = {**database, "query": "select 1", "partition_column": None}
    config["source"] = {**config["source"], "format": "debezium", "database": wrong}
    _, problems = parse_table_config(config, f"tables/{TABLE}.yml")
    assert f"tables/{TABLE}.yml: source.database: give exactly one of table and query" in problems
    assert any("parallel reads split the range of a column" in p for p in problems)
    assert any("landed as parquet or csv, not debezium" in p for p in problems)
    config["source"] = {**config["source"], "format": "parquet"}
    config["source"]["database"] = {**database, "kind": "mariadb"}
    _, problems = parse_table_config(config, f"tables/{TABLE}.yml")
    assert any("read on one connection" in p and "remove partitions" in p for p in problems)
