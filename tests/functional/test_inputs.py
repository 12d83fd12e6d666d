"""Input formats come from their readers, extracts from their transports: each registered
in one place works end to end.

The extra format here (one JSON object per line, a row each) is what a contributor adding
a format writes: one Reader subclass. Registered, it validates in a table config, its
files become the stage's rows, a line that is not JSON is quarantined with its line
number, and the state and current follow. The extra transport (a manifest per date that
lists its files) is one Transport subclass in the same way.
"""

from __future__ import annotations

from typing import Any

from json_rows import CONFIG
from manifests import CONFIG as MANIFEST_CONFIG

from hashcdc.pipeline.inputs.base import Reader
from hashcdc.pipeline.transports import Transport


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


def test_a_registered_transport_says_where_a_tables_extract_is(
    project: Any, manifests: Transport
) -> None:
    """A transport registered from here carries its tables end to end (docs/architecture.md,
    "Adding a transport"): the manifest's files are the date's extract, a file beside them
    that it does not list is not read, and a rejected row is numbered in its own file."""
    project.add_table(MANIFEST_CONFIG)
    project.write_text("landing/manifest_table/part-1.csv", "id,amount\n1,1.00\n2,2.50\n")
    project.write_text("landing/manifest_table/part-2.csv", "id,amount\n3,3\nx,4\n")
    project.write_text("landing/manifest_table/stray.csv", "id,amount\n9,9.99\n")
    project.write_text("landing/manifest_table/2024-01-01.manifest", "part-1.csv\npart-2.csv\n")
    outcome = project.build("2024-01-01", "manifest_table")
    assert outcome.success, outcome.text
    current = project.rows("select id, operation from manifest_table_current order by id")
    assert [(row["id"], row["operation"]) for row in current] == [(1, "I"), (2, "I"), (3, "I")]
    rejects = project.rows("select source_file, line_number from manifest_table_rejects")
    assert [(row["source_file"].rsplit("/", 1)[-1], row["line_number"]) for row in rejects] == [
        ("part-2.csv", 3)
    ]
    missing = project.build("2024-01-02", "manifest_table")
    assert not missing.success
    assert "no manifest for business date 2024-01-02" in missing.text
