"""Column lineage from a table's config (pure Python): what feeds each output column."""

from __future__ import annotations

from typing import Any

from hashcdc.config import parse_table_config
from hashcdc.config.lineage import column_lineage, lineage_text


def _feed(**changes: Any) -> Any:
    raw = {
        "name": "orders",
        "extract_type": "changes",
        "source": {"path": "landing/orders/{business_date}", "format": "debezium"},
        "changes": {"sequence_by": ["source.lsn"], **changes},
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "total", "type": "decimal(10,2)", "renamed_from": "amount"},
            {"name": "loaded", "type": "string", "ignore": True},
        ],
    }
    config, problems = parse_table_config(raw, "tables/orders.yml")
    assert config is not None, problems
    return config


def test_a_feeds_outputs_name_each_columns_fields_and_how() -> None:
    lineage = column_lineage(_feed(history="audit"))
    assert sorted(lineage) == ["orders_current", "orders_history", "orders_rejects", "orders_scd2"]
    history = lineage["orders_history"]
    # A renamed column is fed by its name and its earlier one; the hashes by their columns.
    assert history["total"].fields == ("total", "amount")
    assert history["nonkeyhash"].fields == ("total", "amount") and history["nonkeyhash"].masking
    assert history["keyhash"].fields == history["before_keyhash"].fields == ("id",)
    assert history["event_sequence"].fields == ("source.lsn",)
    assert (history["operation"].type, history["operation"].subtype) == ("INDIRECT", "JOIN")
    assert history["business_date"].fields == ()
    assert "event_sequence" not in lineage["orders_current"]
    assert lineage["orders_rejects"]["raw_values"].fields == ("id", "total", "amount", "loaded")
    assert lineage_text(_feed().columns[1]) == (
        "Lineage: the extract's field `total` (earlier `amount`), cast to decimal(10,2)."
    )
    assert "not compared" in lineage_text(_feed().columns[2])
