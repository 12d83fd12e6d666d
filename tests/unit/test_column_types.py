"""The column-type registry: one home for a type's rules; what is generated from it matches.

Unit tier: no Spark session (hashing's table of encodings is plain Python).
"""

from __future__ import annotations

import pytest

from hashcdc import column_types, registries
from hashcdc.column_types import REGISTRY, TYPES, ColumnType, Family, TypeRegistry
from hashcdc.config import parse_table_config
from hashcdc.pipeline import hashing


def test_the_schema_file_is_generated_from_the_registries() -> None:
    text = registries.SCHEMA_FILE.read_text("utf-8")
    assert registries.schema_text() == text, "run: python -m hashcdc.registries"


def test_the_docs_table_is_generated_from_the_registry() -> None:
    text = registries.DOCS_FILE.read_text("utf-8")
    assert registries.docs_text(text) == text, "run: python -m hashcdc.registries"
    for t in TYPES:
        assert f"| `{t.spelling}` |" in text


def test_every_family_has_a_hash_encoding() -> None:
    assert set(hashing._CANONICAL) == set(Family)


def test_a_type_cannot_be_declared_without_its_family() -> None:
    with pytest.raises(TypeError):
        ColumnType("uuid", hash_form="its text")  # type: ignore[call-arg]


def test_a_registered_type_reaches_every_rule() -> None:
    """Adding a type is one entry in the registry: spelling, aliases, widenings, docs."""
    huge = ColumnType("hugeint", Family.INTEGER, "plain decimal text", ("int128",), width=16)
    registry = TypeRegistry((*TYPES, huge))
    assert registry.normalize(" INT128 ") == "hugeint"
    assert registry.get("hugeint").family is Family.INTEGER
    assert registry.change_problem("bigint", "hugeint") is None
    assert "narrows" in str(registry.change_problem("hugeint", "bigint"))
    assert "hugeint" in registry.names()
    assert "int128" in registry.schema_description()
    assert "`hugeint`" in registry.markdown_table().splitlines()[5]  # bigint widens to it
    assert REGISTRY.normalize("int128") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("Long", "bigint"), ("decimal", "decimal(10,0)"), ("decimal( 12 , 2 )", "decimal(12,2)")],
)
def test_spellings(raw: str, expected: str) -> None:
    assert column_types.normalize_type(raw) == expected
    assert column_types.column_type(expected) in TYPES


def test_an_unknown_type_is_refused_naming_the_registered_ones() -> None:
    problems = _problems({"name": "x", "type": "uuid"})
    assert f"unknown type 'uuid'; use one of {column_types.type_names()}" in problems


def test_lowest_is_for_the_types_that_have_a_lowest_value() -> None:
    assert column_types.lowest_sequence_types() == (
        "string",
        "tinyint",
        "smallint",
        "int",
        "bigint",
    )
    assert column_types.column_type("double").lowest is None


def _problems(column: dict) -> str:
    raw = {
        "name": "t",
        "extract_type": "full",
        "source": {"path": "x.csv"},
        "columns": [{"name": "id", "type": "int", "key": True}, column],
    }
    config, problems = parse_table_config(raw, "tables/t.yml")
    assert config is None
    return "\n".join(problems)


def test_the_widenings_hint_is_built_from_the_registry() -> None:
    from hashcdc.column_types import REGISTRY

    assert REGISTRY.widenings_hint() == (
        "tinyint/smallint/int to a wider integer, float to double, decimal(p,s) to a decimal "
        "with at least as many digits on both sides of the point, date to timestamp"
    )
    assert "is not a widening (widenings: tinyint/smallint/int" in str(
        REGISTRY.change_problem("string", "int")
    )
