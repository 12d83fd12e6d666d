"""A registered input format validates in a config and follows its reader (no Spark run)."""

from __future__ import annotations

import pytest
from json_rows import CONFIG

from hashcdc.config import parse_table_config
from hashcdc.pipeline import inputs
from hashcdc.pipeline.extract import SNIFF_BYTES, first_line
from hashcdc.pipeline.inputs.base import Reader


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


def test_a_csv_header_is_read_from_the_bytes_sniffed_when_they_hold_it() -> None:
    # Each file is opened once: its header line comes from the first bytes the not-text
    # check read, as Java's readLine ends it; when those bytes may not hold all of it (or
    # the encoding writes a line end in more than one byte), the line is read from the file.
    assert first_line(b"id,name\r\n1,a\n", "UTF-8") == "id,name"
    assert first_line(b"id,name\r1,a", "UTF-8") == "id,name"
    assert first_line(b"id,name", "UTF-8") == "id,name"  # the whole file
    assert first_line(b"", "UTF-8") == ""
    assert first_line(b"x" * SNIFF_BYTES, "UTF-8") is None
    assert first_line("\ufeffid,nöme\n".encode(), "UTF-8") == "\ufeffid,nöme"
    assert first_line(b"id,\xe9\n", "ISO-8859-1") == "id,é"
    assert first_line(b"id,\xff\n", "UTF-8") is None  # Java's reader would replace it
    assert first_line("id\n".encode("utf-16"), "UTF-16") is None
    assert first_line(b"id\n", "x-no-such-charset") is None
