"""Input formats come from their readers: a format registered in one place works end to end.

The extra format here (one JSON object per line, a row each) is what a contributor adding
a format writes: one Reader subclass. Registered, it validates in a table config, its
files become the stage's rows, a line that is not JSON is quarantined with its line
number, and the state and current follow.
"""

from __future__ import annotations

from typing import Any

from json_rows import CONFIG

from hashcdc.pipeline.inputs.base import Reader


def test_a_registered_format_runs_end_to_end(project: Any, json_rows: Reader) -> None:
    project.add_table(CONFIG)
    project.write_text(
        "landing/json_rows_table/2024-01-01.jsonl",
        '{"id": 1, "amount": "1.00"}\n{"id": 2, "amount": 2}\n',
    )
    outcome = project.build("2024-01-01", "json_rows_table")
    assert outcome.success, outcome.text
    project.write_text(
        "landing/json_rows_table/2024-01-02.jsonl",
        '{"id": 1, "amount": "1.50"}\n{"id": 2, "amount": 2.0}\nnot json\n{"id": 3}\n',
    )
    outcome = project.build("2024-01-02", "json_rows_table")
    assert outcome.success, outcome.text
    current = project.rows(
        "select id, cast(amount as string) as amount, operation from json_rows_table_current"
    )
    assert {row["id"]: (row["amount"], row["operation"]) for row in current} == {
        1: ("1.50", "U"),
        2: ("2.00", "N"),
        3: (None, "I"),
    }
    rejects = project.rows(
        "select line_number, reasons from json_rows_table_rejects "
        "where business_date = '2024-01-02'"
    )
    assert [row["line_number"] for row in rejects] == [3]
    assert rejects[0]["reasons"][0] == "malformed row: not a JSON object"
