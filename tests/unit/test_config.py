"""Table config validation: every problem reported, each with file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hashcdc.column_types import normalize_type
from hashcdc.config import load_table_configs, parse_table_config
from hashcdc.errors import ConfigError

ARTICLE_STYLE = """
name: synthetic_cdc_data
extract_type: full
delimiter: ','
source:
  path: data/{business_date}
columns:
  - {name: k1, target_type: string, key: true}
  - {name: k2, target_type: string, key: true}
  - {name: k3, target_type: string, key: true}
  - {name: k4, target_type: string, key: true}
  - {name: k5, target_type: string, key: true}
  - {name: v1, target_type: float}
  - {name: v2, target_type: float}
  - {name: v3, target_type: float}
  - {name: v4, target_type: float}
  - {name: v5, target_type: float}
  - {name: v6, target_type: float}
  - {name: v7, target_type: float}
  - {name: v8, target_type: float}
  - {name: v9, target_type: float, ignore: true}
  - {name: v10, target_type: float, ignore: true}
"""


def parse(text: str, file: str = "tables/t.yml") -> tuple:
    return parse_table_config(yaml.safe_load(text), file)


def test_the_articles_config_is_expressible() -> None:
    config, problems = parse(ARTICLE_STYLE, "tables/synthetic_cdc_data.yml")
    assert problems == []
    assert [c.name for c in config.key_columns] == ["k1", "k2", "k3", "k4", "k5"]
    assert [c.name for c in config.compared_columns] == [f"v{i}" for i in range(1, 9)]
    assert config.source.csv["delimiter"] == ","


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("string", "string"),
        ("INT", "int"),
        ("integer", "int"),
        ("long", "bigint"),
        ("decimal(10,2)", "decimal(10,2)"),
        ("decimal( 38 , 0 )", "decimal(38,0)"),
        ("decimal", "decimal(10,0)"),
        ("timestamp", "timestamp"),
        ("decimal(39,2)", None),
        ("decimal(5,6)", None),
        ("uuid", None),
        (3, None),
    ],
)
def test_types(raw: object, expected: str | None) -> None:
    assert normalize_type(raw) == expected


def test_every_problem_is_reported_with_file_and_field() -> None:
    text = """
name: Bad-Name
extract_type: weekly
source:
  path: landing/no_date.csv
  format: xml
  csv: {delimiter: ';;', colour: red}
columns:
  - {name: id, type: uuid, key: true, ignore: true}
  - {name: id, type: string}
  - {name: keyhash, type: string}
  - {name: at, type: string, format: yyyy}
surprise: 1
"""
    config, problems = parse(text)
    assert config is None
    text_of = "\n".join(problems)
    for expected in [
        "tables/t.yml: name:",
        "tables/t.yml: extract_type: must be one of full, delta, changes, got 'weekly'",
        "tables/t.yml: source.path: must be a path template containing {business_date}",
        "tables/t.yml: source.format:",
        "tables/t.yml: source.csv.delimiter: must be a single character",
        "tables/t.yml: source.csv.colour: unknown csv option",
        "tables/t.yml: columns[0] (id).type: unknown type 'uuid'",
        "tables/t.yml: columns[0] (id).ignore: a key column cannot be ignored",
        "tables/t.yml: columns: duplicate column name 'id'",
        "tables/t.yml: columns[2] (keyhash).name: 'keyhash' is reserved",
        "tables/t.yml: columns[3] (at).format:",
        "tables/t.yml: surprise: unknown field",
    ]:
        assert expected in text_of, expected


def test_no_key_column() -> None:
    _, problems = parse(
        "name: t\nextract_type: delta\nsource: {path: 'x/{business_date}'}\n"
        "columns: [{name: a, type: string}]"
    )
    assert problems == [
        "tables/t.yml: columns: no key column: mark at least one column with 'key: true'"
    ]


def test_a_type_cut_at_its_comma_gets_a_hint() -> None:
    _, problems = parse(
        "name: t\nextract_type: full\nsource: {path: 'x/{business_date}'}\n"
        "columns: [{name: a, type: string, key: true}, {name: b, type: decimal(10,2)}]"
    )
    assert any("write the type in quotes" in p for p in problems)


def test_load_reports_all_files(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "good.yml").write_text(
        "name: good\nextract_type: full\nsource: {path: 'x/{business_date}'}\n"
        "columns: [{name: a, type: string, key: true}]"
    )
    (tables / "bad.yml").write_text("name: other\nextract_type: full\n")
    (tables / "broken.yml").write_text("name: [unclosed\n")
    with pytest.raises(ConfigError) as caught:
        load_table_configs(tables)
    message = str(caught.value)
    assert "tables/bad.yml: name: 'other' must match the file name 'bad.yml'" in message
    assert "tables/bad.yml: columns: must be a non-empty list" in message
    assert "tables/broken.yml: not valid YAML" in message
    assert "good.yml" not in message


BASE = (
    "name: t\nextract_type: full\nsource: {path: 'x/{business_date}'}\n"
    "columns: [{name: id, type: int, key: true}, {name: at, type: timestamp}]\n"
)


@pytest.mark.parametrize(
    ("extra", "fraction", "count"),
    [
        ("", 0.01, None),
        ("max_rejects: 5\n", 1.0, 5),
        ("max_reject_fraction: 0.2\n", 0.2, None),
        ("max_rejects: 5\nmax_reject_fraction: 0.2\n", 0.2, 5),
    ],
)
def test_reject_limits_and_their_defaults(extra: str, fraction: float, count: int | None) -> None:
    config, problems = parse(BASE + extra)
    assert problems == []
    assert (config.max_reject_fraction, config.max_rejects) == (fraction, count)


def test_bad_reject_limits_and_keep_last_column_are_reported() -> None:
    _, problems = parse(
        BASE + "max_rejects: -1\nmax_reject_fraction: 2\nduplicates_keep_last_by: nope\n"
    )
    assert problems == [
        "tables/t.yml: max_reject_fraction: must be a number from 0 (no rejects allowed) to 1, "
        "got 2",
        "tables/t.yml: max_rejects: must be a whole number >= 0, got -1",
        "tables/t.yml: duplicates_keep_last_by: must name a configured column, got 'nope'",
    ]
    _, problems = parse(BASE + "duplicates_keep_last_by: id\n")
    assert problems == ["tables/t.yml: duplicates_keep_last_by: must be a non-key column"]


FEED = """
name: t
extract_type: changes
source: {path: 'landing/t/{business_date}/*.json', format: debezium}
changes:
  sequence_by: [source.file, {field: source.pos, type: bigint}, source.row]
  history: audit
columns:
  - {name: id, type: int, key: true}
  - {name: name, type: string}
  - {name: changed_at, type: timestamp, format: epoch_micros, ignore: true}
"""


def test_a_change_feed_config_round_trips() -> None:
    config, problems = parse(FEED)
    assert problems == []
    assert config.is_feed and not config.is_keyless
    fields = [(f.field, f.type, f.alias) for f in config.changes.sequence_by]
    assert fields == [
        ("source.file", "string", "source_file"),
        ("source.pos", "bigint", "source_pos"),
        ("source.row", "bigint", "source_row"),
    ]
    assert config.changes.history == "audit"
    assert type(config).from_dict(config.to_dict()) == config


def test_a_feed_without_a_key_counts_identical_rows() -> None:
    config, problems = parse(FEED.replace(", key: true", ""))
    assert problems == []
    assert config.is_keyless
    assert [c.name for c in config.key_columns] == ["id", "name"]
    assert config.compared_columns == ()


def test_csv_feeds_need_an_operation_column_and_their_own_sequence_columns() -> None:
    text = FEED.replace("format: debezium", "format: csv").replace("*.json", "*.csv")
    _, problems = parse(text)
    assert any("changes.operation_column: a csv feed needs" in p for p in problems)
    assert any("'source.file': a csv feed orders by its own columns" in p for p in problems)
    config, problems = parse(
        text.replace(
            "sequence_by: [source.file, {field: source.pos, type: bigint}, source.row]",
            "sequence_by: [seq]\n  operation_column: op",
        )
    )
    assert problems == []
    assert [names[0] for names, _ in config.source_fields] == [
        "id",
        "name",
        "changed_at",
        "op",
        "seq",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("  history: audit", "changes.history: must be one of net, audit"),
        ("  sequence_by: []", "changes.sequence_by: must be a non-empty list"),
        ("extract_type: changes", "extract_type: must be one of"),
    ],
)
def test_bad_feed_configs_are_reported(change: str, message: str) -> None:
    replacements = {
        "  history: audit": "  history: everything",
        "  sequence_by: []": "  sequence_by: []",
        "extract_type: changes": "extract_type: log",
    }
    text = FEED.replace(change, replacements[change])
    if change.startswith("  sequence_by"):
        text = FEED.replace(
            "  sequence_by: [source.file, {field: source.pos, type: bigint}, source.row]",
            "  sequence_by: []",
        )
    _, problems = parse(text)
    assert any(message in p for p in problems), problems


def test_changes_block_and_event_formats_belong_to_feeds() -> None:
    text = FEED.replace("extract_type: changes", "extract_type: full")
    _, problems = parse(text)
    assert "tables/t.yml: changes: only for extract_type: changes" in problems
    assert any("'debezium' carries change events" in p for p in problems)


ORACLE_FEED = """
name: t
extract_type: changes
source: {path: 'landing/t/{business_date}/*', format: debezium_flat}
changes:
  sequence_by: [__file, __pos, __row]
  unavailable_value: __unavailable__
columns:
  - {name: id, type: bigint, key: true, source_name: ORDER_ID}
  - {name: total, type: 'decimal(12,3)', encoding: debezium_variable_decimal}
  - {name: discount, type: 'decimal(6,2)', encoding: debezium_decimal, source_scale: 4}
"""


def test_source_names_encodings_and_placeholder_are_configurable() -> None:
    config, problems = parse(ORACLE_FEED)
    assert problems == []
    # Binlog file names are text in the flattened form too.
    assert [f.type for f in config.changes.sequence_by] == ["string", "bigint", "bigint"]
    assert config.changes.unavailable_value == "__unavailable__"
    assert [c.source_field for c in config.columns] == ["ORDER_ID", "total", "discount"]
    assert config.columns[2].source_scale == 4
    assert type(config).from_dict(config.to_dict()) == config
    default, _ = parse(ORACLE_FEED.replace("  unavailable_value: __unavailable__\n", ""))
    assert default.changes.unavailable_value == "__debezium_unavailable_value"
    off, _ = parse(ORACLE_FEED.replace("__unavailable__", "null"))
    assert off.changes.unavailable_value is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("encoding: debezium_variable_decimal", "encoding: base64"),
            "columns[1] (total).encoding: must be one of debezium_decimal, "
            "debezium_variable_decimal, got 'base64'",
        ),
        (
            ("type: 'decimal(12,3)'", "type: string"),
            "columns[1] (total).encoding: 'debezium_variable_decimal' decodes decimals: give a "
            "decimal(p,s) type",
        ),
        (
            ("source_scale: 4", "source_scale: -1"),
            "columns[2] (discount).source_scale: must be a whole number 0-38, got -1",
        ),
        (
            ("source_name: ORDER_ID", "source_name: total"),
            "columns: two columns read the same source field 'total'",
        ),
        (
            ("source_name: ORDER_ID", "source_name: ''"),
            "columns[0] (id).source_name: must be the field's name in the extract, got ''",
        ),
        (
            ("unavailable_value: __unavailable__", "unavailable_value: 3"),
            "changes.unavailable_value: must be the connector's placeholder text",
        ),
    ],
)
def test_bad_source_names_and_encodings_are_reported(change: tuple, message: str) -> None:
    _, problems = parse(ORACLE_FEED.replace(*change))
    assert any(f"tables/t.yml: {message}" in p for p in problems), problems


def test_source_names_are_the_header_of_a_csv_extract() -> None:
    text = ARTICLE_STYLE.replace("{name: k1, target_type: string", "{name: k1, source_name: K1")
    text = text.replace("source_name: K1", "source_name: K1, type: string")
    config, problems = parse(text, "tables/synthetic_cdc_data.yml")
    assert problems == []
    assert config.source_fields[:2] == [(("K1",), "k1"), (("k2",), "k2")]


def test_a_sequence_field_may_be_missing_from_some_events() -> None:
    text = ORACLE_FEED.replace(
        "sequence_by: [__file, __pos, __row]",
        "sequence_by: [__file, {field: __pos, missing: lowest}]",
    )
    config, problems = parse(text)
    assert problems == []
    assert config.changes.sequence_by[1].missing == "lowest"
    _, problems = parse(
        text.replace("{field: __pos, missing: lowest}", "{field: __pos, missing: last}")
    )
    assert (
        "tables/t.yml: changes.sequence_by[1].missing: must be 'lowest' (or left out), got 'last'"
        in problems
    )
    _, problems = parse(
        text.replace(
            "{field: __pos, missing: lowest}", "{field: __pos, type: date, missing: lowest}"
        )
    )
    assert any(
        "'lowest' is for string, tinyint, smallint, int, bigint fields, not date" in p
        for p in problems
    )


def test_the_schema_is_published_and_describes_the_repository_tables(capsys) -> None:
    import json

    import jsonschema

    from hashcdc.cli import main
    from hashcdc.config import SCHEMA, SCHEMA_FILE

    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == SCHEMA == json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    checkout = Path(__file__).resolve().parents[2]
    for path in sorted(
        [*checkout.glob("tables/*.yml"), *checkout.glob("integration_tests/tables/*.yml")]
    ):
        jsonschema.validate(yaml.safe_load(path.read_text()), SCHEMA)
    for text in (ARTICLE_STYLE, FEED, ORACLE_FEED):
        jsonschema.validate(yaml.safe_load(text), SCHEMA)


RICH = """
name: orders
extract_type: changes
description: null
max_rejects: 3
source:
  path: landing/orders/{business_date}/*.json
  format: debezium
  database: {kind: postgresql, database: shop, table: public.orders, user_env: PGUSER}
changes:
  sequence_by: [source.commit_lsn, {field: source.lsn}]
  unavailable_value: null
columns:
  - {name: id, target_type: int, key: true, description: null}
  - {name: total, type: 'decimal(12,2)', widened: {from: 'decimal(10,2)', since: '2024-03-01'}}
  - {name: note, type: string, renamed_from: remark, sensitive: true}
"""


def test_every_spelling_builds_the_declared_fields_and_round_trips() -> None:
    config, problems = parse(RICH, "tables/orders.yml")
    assert problems == []
    total = config.columns[1]
    assert (total.widened_from, total.widened_since) == ("decimal(10,2)", "2024-03-01")
    assert config.columns[0].type == "int" and config.columns[0].nullable is False
    assert config.columns[2].renamed_from == ("remark",) and config.columns[2].nullable
    assert config.description == "" and config.columns[0].description == ""
    assert config.max_reject_fraction == 1.0  # only a count given
    assert config.changes.unavailable_value is None
    sequence = [(f.field, f.type) for f in config.changes.sequence_by]
    assert sequence == [("source.commit_lsn", "bigint"), ("source.lsn", "bigint")]
    assert config.source.database.host == "127.0.0.1" and config.source.database.port is None
    assert config.source.csv["delimiter"] == ","
    assert type(config).from_dict(config.to_dict()) == config


def test_the_schema_and_the_defaults_come_from_the_declarations() -> None:
    import dataclasses
    import json

    from hashcdc import registries
    from hashcdc.config import SCHEMA, TableConfig
    from hashcdc.config.declaration import yaml_fields
    from hashcdc.config.model import ChangesConfig, ColumnConfig, DatabaseSource
    from hashcdc.pipeline.inputs import reader_for
    from hashcdc.pipeline.inputs.csv import CsvOptions

    assert json.loads(registries.schema_text()) == SCHEMA, "run: python -m hashcdc.registries"
    declared = {
        TableConfig: SCHEMA["properties"],
        ColumnConfig: SCHEMA["$defs"]["column"]["properties"],
        DatabaseSource: SCHEMA["$defs"]["database"]["properties"],
        # A reader declares its own options, in source.<format>.
        CsvOptions: SCHEMA["$defs"]["csv"]["properties"],
        ChangesConfig: SCHEMA["$defs"]["changes"]["properties"],
    }
    for cls, properties in declared.items():
        fields = yaml_fields(cls)
        spellings = set(getattr(cls, "SPELLINGS", {}))
        assert {f.name for f in fields} | spellings == set(properties), cls
        for field in fields:
            shown = properties[field.name].get("default", dataclasses.MISSING)
            if shown is not dataclasses.MISSING:
                assert shown == field.default, (cls, field.name)
    assert reader_for("csv").options is CsvOptions
    # What the YAML cannot give is the loader's, named: the source file, widened's parts.
    undeclared = {f.name for f in dataclasses.fields(ColumnConfig)} - {
        f.name for f in yaml_fields(ColumnConfig)
    }
    assert undeclared == {"widened_from", "widened_since"}


def test_a_source_mapping_without_its_path_is_reported() -> None:
    config, problems = parse(
        "name: t\nextract_type: full\nsource: {format: csv}\n"
        "columns: [{name: id, type: int, key: true}]"
    )
    assert config is None
    assert problems == [
        "tables/t.yml: source: give exactly one of path (files with {business_date} in it) "
        "and kafka (a topic)"
    ]


def test_a_kafka_source_reads_a_topic_of_change_events() -> None:
    config, problems = parse(
        "name: t\nextract_type: changes\nchanges: {sequence_by: [source.lsn]}\n"
        "source: {format: debezium, kafka: {bootstrap_servers: '127.0.0.1:9092', topic: a.b}}\n"
        "columns: [{name: id, type: int, key: true}]"
    )
    assert problems == []
    assert config is not None and config.source.kafka is not None
    assert (config.source.kafka.topic, config.source.kafka.clock_skew_seconds) == ("a.b", 60)
    assert config.source.path is None


def test_a_kafka_source_is_checked_against_the_other_fields() -> None:
    _, problems = parse(
        "name: t\nextract_type: full\n"
        "source: {path: 'x/{business_date}', kafka: {bootstrap_servers: 'h:1', topic: a}}\n"
        "columns: [{name: id, type: int, key: true}]"
    )
    assert problems == [
        "tables/t.yml: source: give exactly one of path (files with {business_date} in it) "
        "and kafka (a topic)",
        "tables/t.yml: extract_type: a Kafka topic holds change events: set extract_type: changes",
        "tables/t.yml: source.format: a topic of Debezium events is read as debezium or "
        "debezium_flat: set format",
    ]


def test_a_feeds_time_zone_is_an_iana_name() -> None:
    config, problems = parse(FEED)
    assert problems == [] and config.time_zone == "UTC"
    config, problems = parse(FEED.replace("  history: audit\n", "  time_zone: Europe/Berlin\n"))
    assert problems == [] and config.time_zone == "Europe/Berlin"
    _, problems = parse(FEED.replace("  history: audit\n", "  time_zone: Mars/Olympus\n"))
    assert problems == [
        "tables/t.yml: changes.time_zone: unknown time zone 'Mars/Olympus': give an IANA name "
        "such as UTC or Europe/Berlin"
    ]
