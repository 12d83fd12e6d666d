"""The config's JSON Schema and the problems a config has against it.

The fields of ``tables/<name>.yml`` are declared once, in :mod:`hashcdc.config.model`;
``hashcdc/tables.schema.json`` is the JSON Schema written from those declarations (and the
registries' types and formats) by ``python -m hashcdc.registries``: fields, types,
enumerations, defaults, descriptions and each field's message (``x-message``;
``x-unknown`` for an object's unknown fields). A unit test fails while the file and the
declarations differ. The validation reads the file (no registry imported), and
``jsonschema`` checks a config against it, with the input formats declared to it.

The config is at the bottom of the package: it imports neither the readers nor the
registries. The formats it accepts are the schema file's (written from the readers by
``python -m hashcdc.registries``), and a reader registered at run time (a plugin, a test)
declares its own with :func:`declare_format` (``hashcdc.pipeline.inputs.register`` does).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "tables.schema.json"

# The schema of tables/<name>.yml as written from the declarations. `hashcdc schema` prints
# it for editors; the rules that involve several fields are in hashcdc.config.rules.
SCHEMA: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
SCHEMA_DEFS = {f"#/$defs/{name}": node for name, node in SCHEMA["$defs"].items()}
TABLE_FIELDS = SCHEMA["properties"]

EXTRACT_TYPES = tuple(TABLE_FIELDS["extract_type"]["enum"])
# Spellings accepted for the operation of an event in csv/parquet feeds -> Debezium's letter.
OPERATION_SPELLINGS = {
    "c": "c",
    "i": "c",
    "insert": "c",
    "create": "c",
    "u": "u",
    "update": "u",
    "d": "d",
    "delete": "d",
    "r": "r",
    "read": "r",
    "snapshot": "r",
    "t": "t",
    "truncate": "t",
}
# Sequence fields whose natural order is text order (binlog file names are zero-padded), in
# the envelope and in the flattened form.
TEXT_SEQUENCE_FIELDS = ("source.file", "__file")
# Column encodings for values that arrive in a connector's binary form (no schema wrapper).
COLUMN_ENCODINGS = tuple(
    e for e in SCHEMA["$defs"]["column"]["properties"]["encoding"]["enum"] if e is not None
)
NAME_PATTERN = re.compile(TABLE_FIELDS["name"]["pattern"])
RESERVED_COLUMNS = (
    "keyhash",
    "nonkeyhash",
    "operation",
    "eff_start_date",
    "business_date",
    "event_op",
    "event_sequence",
    "before_keyhash",
    "copies",
)
# Format name -> whether it carries change events only (its tables are change feeds).
_FORMAT_NODE = SCHEMA["$defs"]["source"]["properties"]["format"]
_FORMATS: dict[str, bool] = {
    name: name in _FORMAT_NODE.get("x-event-formats", ()) for name in _FORMAT_NODE["enum"]
}


def declare_format(name: str, carries_events: bool) -> None:
    """Accept ``source.format: name`` in configs (a reader registered at run time)."""
    _FORMATS[name] = carries_events


def format_names() -> tuple[str, ...]:
    """The formats a config may name: the schema's, then those declared since, in order."""
    return tuple(_FORMATS)


def format_message(formats: Sequence[str]) -> str:
    """The schema's message for a ``source.format`` that is none of ``formats``."""
    return f"must be one of {', '.join(formats)}, got {{value!r}}"


# The csv reader's options, as the schema (written from the reader's declaration) gives them.
CSV_OPTION_DEFAULTS: dict[str, Any] = {
    option: node["default"] for option, node in SCHEMA["$defs"]["csv"]["properties"].items()
}


class Problems:
    """Collects validation problems for one file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        """Add a problem at a field (its place as :func:`field_place` names it)."""
        self.items.append(f"{self.file}: {where}: {message}")


def field_place(raw: dict[str, Any], path: Sequence[Any]) -> str:
    """A field's place as messages name it: ``columns[0] (id).type``, ``source.csv.quote``."""
    text = ""
    node: Any = raw
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
            item = node[part] if isinstance(node, list) and part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            if path[0] == "columns" and isinstance(name, str) and NAME_PATTERN.match(name):
                text += f" ({name})"
            node = item
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text


def _schema_message(error: jsonschema.ValidationError) -> str:
    """The message of a schema node that a value fails: its ``x-message``, with the value."""
    message = error.schema.get("x-message") if isinstance(error.schema, dict) else None
    if message is None:
        return error.message
    return message.replace("{value!r}", repr(error.instance))


def _validator() -> jsonschema.Draft202012Validator:
    """The schema's validator, with the formats declared now."""
    return _validator_for(format_names())


@functools.cache
def _validator_for(formats: tuple[str, ...]) -> jsonschema.Draft202012Validator:
    schema = json.loads(json.dumps(SCHEMA))
    node = schema["$defs"]["source"]["properties"]["format"]
    node["enum"] = list(formats)
    node["x-message"] = format_message(formats)
    return jsonschema.Draft202012Validator(schema)


def event_formats() -> tuple[str, ...]:
    """The formats that carry change events only."""
    return tuple(name for name, carries_events in _FORMATS.items() if carries_events)


def schema_problems(raw: dict[str, Any], problems: Problems) -> None:
    """Every way ``raw`` fails the schema, with the field and the schema's own message."""
    for error in _validator().iter_errors(raw):
        _report(raw, error, problems)


def _report(raw: dict[str, Any], error: jsonschema.ValidationError, problems: Problems) -> None:
    path = list(error.absolute_path)
    if error.validator == "oneOf" and error.context:
        # The failures of the alternative of the value's own kind (a mapping or a string)
        # say which field is wrong; without one, the node's own message does.
        chosen = _alternative_of(error)
        own_kind = [sub for sub in error.context if sub.relative_schema_path[0] == chosen]
        if own_kind:
            for failure in own_kind:
                _report(raw, failure, problems)
            return
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        what = error.schema.get("x-unknown", "unknown field")
        for extra in error.instance:
            if extra not in allowed:
                problems.add(
                    field_place(raw, [*path, extra]), f"{what} (allowed: {', '.join(allowed)})"
                )
        return
    if error.validator == "required":
        for missing in error.validator_value:
            if missing not in error.instance:
                node = error.schema["properties"].get(missing, {})
                node = SCHEMA_DEFS.get(node.get("$ref", ""), node)
                message = node.get("x-message", f"{missing} is required")
                problems.add(
                    field_place(raw, [*path, missing]), message.replace("{value!r}", "None")
                )
        return
    problems.add(field_place(raw, path) or "(document)", _schema_message(error))


def _alternative_of(error: jsonschema.ValidationError) -> int:
    """Which alternative of a ``oneOf`` matches the kind of value given (mapping or text)."""
    kinds = {dict: "object", str: "string"}
    wanted = kinds.get(type(error.instance))
    for index, alternative in enumerate(error.validator_value):
        resolved = SCHEMA_DEFS.get(alternative.get("$ref", ""), alternative)
        if wanted is not None and resolved.get("type") == wanted:
            return index
    return -1
