"""`hashcdc init NAME --sample FILE`: a table config from a sample CSV (no Spark)."""

from __future__ import annotations

from pathlib import Path

import yaml

from hashcdc.cli import main
from hashcdc.codegen.sample import column_name
from hashcdc.config import parse_table_config


def test_init_writes_a_config_from_a_sample_and_leaves_the_keys_to_the_user(
    tmp_path: Path, capsys
) -> None:
    (tmp_path / "dbt_project.yml").write_text("name: x\n")
    sample = tmp_path / "customers_2024-03-01.csv"
    sample.write_text(
        "CustomerID;Full Name;balance;born;updated_at;active\n"
        "1;Ann;10.50;1990-01-02;2024-03-01 10:00:00;true\n"
        "2;Bob;;1985-12-31;2024-03-01 11:30:00;false\n"
        "3000000000;Cy;7;2001-07-04;2024-03-01 12:00:00;true\n"
    )
    args = ["--project-dir", str(tmp_path), "init", "customers", "--sample", str(sample)]
    assert main([*args, "--delimiter", ";"]) == 0
    assert "mark the key column(s)" in capsys.readouterr().out
    written = tmp_path / "tables" / "customers.yml"
    raw = yaml.safe_load(written.read_text())
    assert raw["source"] == {
        "path": "landing/customers/{business_date}/customers_2024-03-01.csv",
        "format": "csv",
        "csv": {"delimiter": ";"},
    }
    assert [(c["name"], c["type"], c.get("source_name")) for c in raw["columns"]] == [
        ("customer_id", "bigint", "CustomerID"),
        ("full_name", "string", "Full Name"),
        ("balance", "double", None),
        ("born", "date", None),
        ("updated_at", "timestamp", None),
        ("active", "boolean", None),
    ]
    # No key is guessed: validation says so until the user marks one.
    config, problems = parse_table_config(raw, "tables/customers.yml")
    assert config is None and any("key" in p for p in problems)
    raw["columns"][0]["key"] = True
    config, problems = parse_table_config(raw, "tables/customers.yml")
    assert problems == [] and config.key_columns[0].source_name == "CustomerID"

    assert main([*args, "--delimiter", ";"]) == 2  # never overwritten unless --force
    assert "exists" in capsys.readouterr().err


def test_column_names_become_identifiers() -> None:
    assert column_name("OrderDate") == "order_date"
    assert column_name(" unit price (EUR) ") == "unit_price_eur"
    assert column_name("2nd") == "c_2nd"
