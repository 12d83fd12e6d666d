"""How a config field is declared once: a dataclass field whose metadata is its schema.

Each field of the config's dataclasses (:mod:`hashcdc.config.model`) is declared with
:func:`setting`: its Python type and default, its description, its constraints and the
message a user reads when a value breaks them. From that one declaration come

- the JSON Schema of ``tables/<name>.yml`` (:func:`json_schema`; ``tables.schema.json`` is
  its written form, for editors and for the validation, and a unit test fails while the
  two differ), and
- the config built from a validated YAML document (:func:`build`), with the defaults of
  the fields it leaves out.

A class names its schema node in ``SCHEMA`` (its ``$defs`` name, description, message
for unknown fields). Spellings a YAML file may use that are not fields of their own (the
article's ``target_type``, ``widened: {from, since}``) are declared beside the fields in
the class's ``SPELLINGS``, each placed after the field it follows; the loader turns
them into fields.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin

# Nodes several fields share, by reference.
SHARED_DEFS: dict[str, dict[str, Any]] = {
    "character": {
        "type": "string",
        "minLength": 1,
        "maxLength": 1,
        "x-message": "must be a single character, got {value!r}",
    },
    "flag": {"type": "boolean", "x-message": "must be true or false"},
}
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object"}
_DOCUMENTED = "hashcdc_schema"


def setting(
    default: Any = dataclasses.MISSING,
    *,
    description: str | None = None,
    message: str | None = None,
    factory: Callable[[], Any] | None = None,
    schema: dict[str, Any] | None = None,
    required: bool | None = None,
    show_default: bool | None = None,
    **constraints: Any,
) -> Any:
    """A config field: its default and its schema node in one declaration.

    Parameters
    ----------
    default, factory
        The field's default (or a factory of it); neither: the field is required.
    description
        What the field means, shown by editors and in ``hashcdc schema``.
    message
        What a user reads when the value breaks the node (``{value!r}``: the value).
    schema
        The node's type part when the Python type does not say it (alternative spellings,
        a shared node); replaces the one derived from the type.
    required
        Whether the schema requires the field; by default, when it has no default.
    show_default
        Whether the schema shows the default; by default, when it is not None (an absent
        optional field). False where the default depends on other fields.
    constraints
        JSON Schema keywords (``pattern``, ``minimum``, ``maxLength``, ``x-event-formats``
        as ``x_event_formats``, …).

    """
    node = {
        "description": description,
        "schema": schema,
        "required": required,
        "show_default": show_default,
        "constraints": {
            name.replace("_", "-") if name.startswith("x_") else name: value
            for name, value in constraints.items()
        },
        "message": message,
    }
    metadata = {_DOCUMENTED: node}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _declared(field: dataclasses.Field[Any]) -> dict[str, Any] | None:
    return field.metadata.get(_DOCUMENTED)


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _without_none(hint: Any) -> tuple[Any, bool]:
    """The type inside ``X | None``, and whether None was allowed."""
    if get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], len(args) < len(get_args(hint))
    return hint, False


def _ref(cls: type) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{cls.SCHEMA['name']}"}  # type: ignore[attr-defined]


def _type_node(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a Python type: scalars, ``Literal``, tuples, declared classes."""
    inner, optional = _without_none(hint)
    if dataclasses.is_dataclass(inner):
        return _ref(inner)  # an absent section is left out, never written as null
    if get_origin(inner) is Literal:
        values = list(get_args(inner))
        return {"enum": [*values, None] if optional else values}
    if get_origin(inner) is tuple:
        (item, _) = get_args(inner)
        items = _ref(item) if dataclasses.is_dataclass(item) else _type_node(item)
        return {"type": "array", "items": items}
    json_type = _JSON_TYPES[get_origin(inner) or inner]
    return {"type": [json_type, "null"] if optional else json_type}


def _field_node(cls: type, field: dataclasses.Field[Any]) -> dict[str, Any]:
    declared = _declared(field) or {}
    node: dict[str, Any] = {}
    if declared.get("description"):
        node["description"] = declared["description"]
    schema = declared.get("schema")
    node |= schema if schema is not None else _type_node(_hints(cls)[field.name])
    node |= declared.get("constraints", {})
    default = _default(field)
    show = declared.get("show_default")
    if show is None:
        show = default is not None
    if show and default is not dataclasses.MISSING:
        node["default"] = default
    if declared.get("message"):
        node["x-message"] = declared["message"]
    return node


def yaml_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields a YAML document may give (declared with :func:`setting`)."""
    return [f for f in dataclasses.fields(cls) if _declared(f) is not None]


def _object_node(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    """A class's object node; the classes it refers to are added to ``defs``."""
    own: dict[str, Any] = {k: v for k, v in cls.SCHEMA.items() if k != "name"}  # type: ignore[attr-defined]
    alternatives = own.pop("alternatives", None)
    spellings: dict[str, tuple[str, dict[str, Any]]] = getattr(cls, "SPELLINGS", {})
    properties: dict[str, Any] = {}
    required = []
    for field in yaml_fields(cls):
        properties[field.name] = _field_node(cls, field)
        declared = _declared(field) or {}
        is_required = declared.get("required")
        if is_required is None:
            is_required = _default(field) is dataclasses.MISSING
        if is_required:
            required.append(field.name)
        for spelling, (after, node) in spellings.items():
            if after == field.name:
                properties[spelling] = node
        for nested in _nested_classes(cls, field):
            _add_def(nested, defs)
    body: dict[str, Any] = {"type": "object", **own}
    if required:
        body["required"] = required
    body |= {"properties": properties, "additionalProperties": False}
    if alternatives is None:
        return body
    outer = {k: body.pop(k) for k in ("description", "x-message") if k in body}
    return {**outer, "oneOf": [*alternatives, body]}


def _nested_classes(cls: type, field: dataclasses.Field[Any]) -> list[type]:
    inner, _ = _without_none(_hints(cls)[field.name])
    if get_origin(inner) is tuple:
        inner = get_args(inner)[0]
    return [inner] if dataclasses.is_dataclass(inner) else []


def _add_def(cls: type, defs: dict[str, Any]) -> None:
    name = cls.SCHEMA["name"]  # type: ignore[attr-defined]
    if name not in defs:
        defs[name] = None  # reserved first, so a def keeps its place before the ones it uses
        defs[name] = _object_node(cls, defs)


def json_schema(root: type, extra_classes: tuple[type, ...] = ()) -> dict[str, Any]:
    """The JSON Schema of a root class (the table), its nested classes as ``$defs``."""
    defs: dict[str, Any] = {}
    for cls in extra_classes:
        _add_def(cls, defs)
    body = _object_node(root, defs)
    header = {k: body.pop(k) for k in ("$schema", "$id", "title", "description") if k in body}
    for name, node in SHARED_DEFS.items():
        defs.setdefault(name, node)
    return {**header, **body, "$defs": defs}


def build(cls: type, data: dict[str, Any]) -> Any:
    """An instance of a declared class from plain data, nested classes and tuples included.

    ``data`` is valid (checked against the schema and the rules) and spelled with the
    fields' own names; a field it leaves out takes its declared default.
    """
    values: dict[str, Any] = {}
    hints = _hints(cls)
    for field in dataclasses.fields(cls):
        if field.name not in data:
            continue
        value = data[field.name]
        if value is not None:
            values[field.name] = _value(hints[field.name], value)
        elif _without_none(hints[field.name])[1] or _default(field) is dataclasses.MISSING:
            values[field.name] = None
        # a null for a field that cannot be null: its default
    return cls(**values)


def _value(hint: Any, value: Any) -> Any:
    inner, _ = _without_none(hint)
    if dataclasses.is_dataclass(inner) and isinstance(value, dict):
        return build(inner, value)  # type: ignore[arg-type]
    if get_origin(inner) is tuple:
        (item, _) = get_args(inner)
        items = [value] if isinstance(value, str) else value
        return tuple(_value(item, v) for v in items)
    return value
