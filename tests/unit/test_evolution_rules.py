"""Schema evolution's pure parts: config rules, type changes, type inference, generation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_generate import make_project

from hashcdc.codegen import generate
from hashcdc.column_types import type_change_problem
from hashcdc.config import load_table_configs, parse_table_config
from hashcdc.pipeline.header import header_differences, inferred_type, new_columns_yaml

TABLE = """
name: t
extract_type: full
source: landing/t/{business_date}.csv
columns:
  - {name: id, type: int, key: true}
"""


def parse(columns: str) -> tuple:
    return parse_table_config(yaml.safe_load(TABLE + columns), "tables/t.yml")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("tinyint", "int"),
        ("int", "bigint"),
        ("float", "double"),
        ("date", "timestamp"),
        ("decimal(10,2)", "decimal(12,2)"),
        ("decimal(10,2)", "decimal(12,4)"),
    ],
)
def test_widenings_are_allowed(old: str, new: str) -> None:
    assert type_change_problem(old, new) is None


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("bigint", "int", "narrows"),
        ("decimal(12,4)", "decimal(12,2)", "lowers the scale"),
        ("decimal(10,2)", "decimal(11,4)", "fewer digits before the point"),
        ("string", "int", "not a widening"),
        ("double", "float", "narrows the column"),
    ],
)
def test_other_type_changes_are_refused_with_why(old: str, new: str, why: str) -> None:
    assert why in str(type_change_problem(old, new))


def test_lifecycle_fields_build_the_shape_of_each_date() -> None:
    config, problems = parse(
        """  - {name: email, type: string, added: 2024-03-03}
  - {name: name, type: string, removed: '2024-03-04'}
  - {name: code, type: string, renamed_from: [c0, old_code]}
  - {name: price, type: double, widened: {from: float, since: 2024-03-03}}
  - {name: ssn, type: string, sensitive: true}
"""
    )
    assert problems == []
    assert [c.name for c in config.as_read_on("2024-03-02").columns] == [
        "id",
        "name",
        "code",
        "price",
        "ssn",
    ]
    on_fourth = config.as_read_on("2024-03-04")
    assert [c.name for c in on_fourth.columns] == ["id", "email", "code", "price", "ssn"]
    price = {c.name: c for c in config.as_read_on("2024-03-02").columns}["price"]
    assert price.type == "float" and on_fourth.columns[3].type == "double"
    code = config.columns[3]
    assert code.hash_name == "c0" and code.source_fields == ("code", "old_code", "c0")
    assert [c.name for c in config.main_columns] == ["id", "email", "name", "code", "price"]
    assert [c.name for c in config.compared_columns] == ["email", "name", "code", "price"]
    assert [c.name for c in config.sensitive_columns] == ["ssn"]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("  - {name: a, type: string, added: '2024-03-05', removed: '2024-03-05'}", "after added"),
        ("  - {name: a, type: string, added: '2024-02-30'}", "is not a date"),
        ("  - {name: a, type: string, added_as_update: true}", "only with added"),
        ("  - {name: a, type: int, widened: {from: bigint, since: 2024-03-01}}", "narrows"),
        ("  - {name: a, type: int, widened: {from: int, since: 2024-03-01}}", "is no change"),
        ("  - {name: a, type: int, widened: {from: int}}", "widened.since"),
        (
            "  - {name: a, type: string}\n  - {name: b, type: string, renamed_from: a}",
            "still a column",
        ),
        ("  - {name: a, type: string, renamed_from: A-1}", "earlier name"),
    ],
)
def test_lifecycle_mistakes_are_named(columns: str, message: str) -> None:
    _, problems = parse(columns)
    assert any(message in p for p in problems), problems


def test_keys_cannot_come_go_or_be_sensitive() -> None:
    text = TABLE.replace("key: true}", "key: true, sensitive: true, added: '2024-01-01'}")
    _, problems = parse_table_config(yaml.safe_load(text), "tables/t.yml")
    assert sum("not for a key column" in p for p in problems) == 2


def test_header_differences_accept_a_renamed_columns_names() -> None:
    expected = [("id",), ("code", "old_code")]
    assert header_differences(expected, ["id", "old_code"]) == []
    assert header_differences(expected, ["id", "code"]) == []
    assert header_differences(expected, ["old_code", "id"]) == [
        "columns in another order: old_code, id"
    ]
    assert header_differences(expected, ["id", "code", "email"]) == ["extra column(s) email"]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1", "-2", None], "int"),
        (["1", "5000000000"], "bigint"),
        (["1.5", "2"], "double"),
        (["true", "False"], "boolean"),
        (["2024-01-05"], "date"),
        (["2024-01-05 10:00:00", "2024-01-05T10:00Z"], "timestamp"),
        (["a", "1"], "string"),
        ([None, ""], "string"),
    ],
)
def test_types_are_inferred_from_sample_values(values: list, expected: str) -> None:
    assert inferred_type(values) == expected


def test_new_columns_yaml_is_ready_to_paste() -> None:
    text = new_columns_yaml({"email": "string"}, "2024-03-03")
    assert text == "  - name: email\n    type: string\n    added: '2024-03-03'\n"
    column = yaml.safe_load("columns:\n" + text)["columns"][0]
    assert column == {"name": "email", "type": "string", "added": "2024-03-03"}


def test_generated_models_carry_shape_changes_and_sensitive_models(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project / "tables" / "orders.yml").write_text(
        """
name: orders
extract_type: full
source: {path: 'landing/orders/{business_date}.csv'}
sensitive_grants: {select: [pii_readers]}
columns:
  - {name: id, type: bigint, key: true}
  - {name: total, type: double, widened: {from: float, since: 2024-03-03}}
  - {name: email, type: string, added: 2024-03-03}
  - {name: card, type: string, sensitive: true}
"""
    )
    changed = {
        p.as_posix() for p in generate.write(project, load_table_configs(project / "tables"))
    }
    assert {
        "models/orders/orders_sensitive_state.sql",
        "models/orders/orders_sensitive_current.sql",
        "models/orders/orders_sensitive_history.sql",
    } <= changed
    state = (project / "models/orders/orders_state.sql").read_text()
    assert "'card'" not in state and "'email': {'added': '2024-03-03'}" in state
    assert "'total': {'widened_from': 'float', 'widened_since': '2024-03-03'}" in state
    sensitive = (project / "models/orders/orders_sensitive_state.sql").read_text()
    assert "hash_column='sensitive_hash'" in sensitive and "'card'" in sensitive
    assert "grants={'select': ['pii_readers']}" in sensitive
    assert "-- depends_on: {{ ref('orders_state') }}" in sensitive
    for kind in ("current", "history"):
        model = (project / f"models/orders/orders_sensitive_{kind}.sql").read_text()
        assert "ref('orders_sensitive_state')" in model and "grants=" in model
    properties = (project / "models/orders/_orders__models.yml").read_text()
    assert "widened from float on 2024-03-03" in properties and "added on 2024-03-03" in properties
