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


def test_the_events_go_to_a_file_by_default_an_endpoint_by_setting_or_nowhere(
    tmp_path: Any,
) -> None:
    from openlineage.client.transport.file import FileTransport
    from openlineage.client.transport.http import HttpTransport

    from hashcdc.runner.lineage import run_event, transport_of

    settings = tmp_path / "dbt_project.yml"
    settings.write_text("name: p\nvars: {}\n")
    assert isinstance(transport_of(tmp_path), FileTransport)
    assert (tmp_path / "logs").is_dir()
    settings.write_text("name: p\nvars:\n  hashcdc_lineage: {url: 'http://127.0.0.1:5000'}\n")
    transport = transport_of(tmp_path)
    assert isinstance(transport, HttpTransport) and transport.url == "http://127.0.0.1:5000"
    settings.write_text("name: p\nvars:\n  hashcdc_lineage: false\n")
    assert transport_of(tmp_path) is None
    row = {"invocation_id": "i", "status": "error", "ended_at": None}
    event = run_event(_feed(), row, "lake")
    assert (event.eventType.value, event.job.name) == ("FAIL", "lake.orders")
    assert [o.name for o in event.outputs][:2] == ["lake.orders_current", "lake.orders_history"]
