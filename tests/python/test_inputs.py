"""Input formats come from their readers: a format registered in one place works end to end.

The extra format here (one JSON object per line, a row each) is what a contributor adding
a format writes: one Reader subclass. Registered, it validates in a table config, its
files become the stage's rows, a line that is not JSON is quarantined with its line
number, and the state and current follow.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from hashcdc import inputs
from hashcdc.config import TableConfig, parse_table_config
from hashcdc.config import schema as config_schema
from hashcdc.inputs.base import Reader
from hashcdc.pipeline.columns import BLOCK_START, CORRUPT_RECORD, ROW_ID, SOURCE_FILE
from hashcdc.pipeline.extract import LINE_COLUMN, read_event_lines


class JsonRowsReader(Reader):
    """One JSON object per line, a row each; fields by name (any of a column's names)."""

    name: ClassVar[str] = "json_rows"
    description: ClassVar[str] = "one JSON object per line, a row each"
    malformed_row: ClassVar[str] = "malformed row: not a JSON object"

    def read_rows(self, spark: SparkSession, table: TableConfig, files: list[str]) -> DataFrame:
        lines = read_event_lines(spark, files).where(F.trim(LINE_COLUMN) != "")
        parsed = lines.select("*", F.try_parse_json(LINE_COLUMN).alias("_parsed"))

        def field(sources: tuple[str, ...]) -> Any:
            paths = [f"$['{name}']" for name in sources]
            return F.coalesce(*[F.try_variant_get("_parsed", path, "string") for path in paths])

        return parsed.select(
            *[field(sources).alias(name) for sources, name in table.source_fields],
            F.when(F.col("_parsed").isNull(), F.col(LINE_COLUMN)).alias(CORRUPT_RECORD),
            SOURCE_FILE,
            BLOCK_START,
            ROW_ID,
        )


CONFIG = {
    "name": "json_rows_table",
    "extract_type": "full",
    "max_reject_fraction": 0.5,
    "source": {"path": "landing/json_rows_table/{business_date}.jsonl", "format": "json_rows"},
    "columns": [
        {"name": "id", "type": "int", "key": True},
        {"name": "amount", "type": "decimal(8,2)"},
    ],
}


@pytest.fixture
def json_rows(monkeypatch: pytest.MonkeyPatch) -> Reader:
    """The reader registered as ``inputs.register`` does, and unregistered after the test."""
    reader = JsonRowsReader()
    monkeypatch.setitem(inputs._READERS, reader.name, reader)
    monkeypatch.setitem(config_schema._FORMATS, reader.name, reader.carries_events)
    return reader


def test_an_unregistered_format_is_refused_naming_the_registered_ones() -> None:
    config, problems = parse_table_config(CONFIG, "tables/json_rows_table.yml")
    assert config is None
    assert (
        "tables/json_rows_table.yml: source.format: must be one of csv, parquet, debezium, "
        "debezium_flat, got 'json_rows'"
    ) in problems


def test_a_registered_format_validates_and_follows_its_reader(
    json_rows: Reader, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from hashcdc.cli import main

    assert main(["schema"]) == 0  # `hashcdc schema` names it for editors
    schema = json.loads(capsys.readouterr().out)
    assert "json_rows" in schema["$defs"]["source"]["properties"]["format"]["enum"]
    config, problems = parse_table_config(CONFIG, "tables/json_rows_table.yml")
    assert problems == [] and config is not None
    assert inputs.reader_for(config.source.format) is json_rows
    assert "json_rows" in inputs.format_names()
    assert "json_rows" not in inputs.event_format_names()
    feed = CONFIG | {"extract_type": "changes", "changes": {"sequence_by": ["id"]}}
    _, problems = parse_table_config(feed, "tables/json_rows_table.yml")
    # Not an event format: a feed in it names its operation column, as csv's does.
    assert any("needs the name of its operation column" in p for p in problems)


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
