"""Relation names come from one place (pure Python, unit tier)."""

from __future__ import annotations

from hashcdc.relations import Relations, is_state


def test_every_relation_name_of_a_table() -> None:
    names = Relations("orders")
    assert (names.stage, names.rejects, names.state) == (
        "stg_orders",
        "orders_rejects",
        "orders_state",
    )
    assert (names.current, names.history, names.scd2, names.changelog) == (
        "orders_current",
        "orders_history",
        "orders_scd2",
        "orders_changelog",
    )
    assert names.sensitive_state == "orders_sensitive_state"
    assert names.sensitive_current == "orders_sensitive_current"
    assert names.sensitive_history == "orders_sensitive_history"


def test_names_in_a_schema_and_the_state_test() -> None:
    names = Relations("orders").in_schema("lake")
    assert names.state == "lake.orders_state"
    assert names.sensitive_history == "lake.orders_sensitive_history"
    assert is_state(names.state) and is_state(names.sensitive_state)
    assert not is_state(names.current)
