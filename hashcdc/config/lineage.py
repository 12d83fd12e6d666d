"""Column lineage: which source fields feed each column of a table's outputs.

Derived from the table's config alone, once, for the two places that show it: the
OpenLineage events each run emits (:mod:`hashcdc.runner.lineage`, the column-lineage
facet) and the column descriptions of dbt docs (:mod:`hashcdc.codegen.generate`). A
field is named as the extract carries it: a column's ``source_name`` (else its name),
then its earlier names (``renamed_from``); a change feed's ordering fields as
``changes.sequence_by`` names them. Each input says how it feeds the column, in
OpenLineage's terms: ``DIRECT`` (the value comes from it: ``IDENTITY`` carried as read,
``TRANSFORMATION`` cast or hashed) or ``INDIRECT`` (it decides the value: ``JOIN``, the
comparison of a key's hashes with the state's; ``FILTER``; ``AGGREGATION``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hashcdc.config.model import ColumnConfig, TableConfig


@dataclass(frozen=True)
class Inputs:
    """The source fields a column is made from, and how."""

    fields: tuple[str, ...]
    type: str = "DIRECT"
    subtype: str = "TRANSFORMATION"
    description: str = ""
    # The value is not the source's: a sensitive value withheld, a hash.
    masking: bool = False


# Columns no source field feeds: where a row came from, or the run's own dates.
NO_INPUTS = Inputs(())


def _fields(columns: tuple[ColumnConfig, ...]) -> tuple[str, ...]:
    return tuple(field for column in columns for field in column.source_fields)


def column_inputs(column: ColumnConfig) -> Inputs:
    """A configured column's inputs: its field (and earlier names), cast to its type."""
    how = f"cast to {column.type}"
    if column.ignore:
        how += "; carried, not compared (ignore: true)"
    return Inputs(column.source_fields, description=how)


def lineage_text(column: ColumnConfig) -> str:
    """The sentence dbt docs add to the column's description."""
    own, *earlier = column.source_fields
    fields = f"`{own}`" + (f" (earlier `{'`, `'.join(earlier)}`)" if earlier else "")
    return f"Lineage: the extract's field {fields}, {column_inputs(column).description}."


def column_lineage(table: TableConfig) -> dict[str, dict[str, Inputs]]:
    """Per output relation of the table (its name), per column: the inputs.

    ``current``, ``history``, ``scd2``, ``rejects``, and ``changelog`` and the sensitive
    tables when the table has them; their columns in the order the tables have them.
    """
    names = table.relations
    keys = _fields(table.key_columns)
    compared = _fields(table.compared_columns)
    decided = Inputs(keys + compared, "INDIRECT", "JOIN", "the key's hashes compared")
    keyhash = Inputs(keys, subtype="TRANSFORMATION", description="hash of the key", masking=True)
    payload = {c.name: column_inputs(c) for c in table.main_columns}
    payload["keyhash"] = keyhash
    payload["nonkeyhash"] = Inputs(
        compared, description="hash of the compared columns", masking=True
    )
    payload["operation"] = decided
    history: dict[str, Inputs] = {**payload, "eff_start_date": decided}
    if table.changes is not None:
        sequence = tuple(f.field for f in table.changes.sequence_by)
        if table.changes.history == "audit":
            history["before_keyhash"] = keyhash
            history["event_op"] = Inputs(("op",), subtype="IDENTITY", description="event kind")
        history["event_sequence"] = Inputs(sequence, description="the event's order")
        if table.is_keyless:
            history["copies"] = Inputs(keys, "INDIRECT", "AGGREGATION", "identical rows counted")
    history["business_date"] = NO_INPUTS
    every = _fields(table.columns)
    found = {
        names.current: {**payload, "eff_start_date": decided},
        names.history: history,
        names.scd2: {
            **payload,
            **dict.fromkeys(("valid_from", "valid_to", "is_current", "is_deleted"), decided),
        },
        names.rejects: {
            "source_file": NO_INPUTS,
            "row_number": NO_INPUTS,
            "line_number": NO_INPUTS,
            "reasons": Inputs(every, "INDIRECT", "FILTER", "why the row was not loaded"),
            "raw_values": Inputs(
                every,
                subtype="IDENTITY",
                description="as read; sensitive values withheld",
                masking=bool(table.sensitive_columns),
            ),
            "raw_line": Inputs(
                every,
                subtype="IDENTITY",
                description="a malformed line as read",
                masking=bool(table.sensitive_columns),
            ),  # fmt: skip
            "keyhash": keyhash,
            "business_date": NO_INPUTS,
        },
    }
    if table.changelog:
        images = Inputs(_fields(table.main_columns), description="the row before and after")
        found[names.changelog] = {
            "keyhash": keyhash,
            "operation": decided,
            "before_image": images,
            "after_image": images,
            "changed_columns": Inputs(compared, "INDIRECT", "JOIN", "the columns that changed"),
            "business_date": NO_INPUTS,
        }
    if table.sensitive_columns:
        hidden = _fields(table.sensitive_columns)
        sensitive = {c.name: column_inputs(c) for c in table.sensitive_columns}
        sensitive["keyhash"] = keyhash
        sensitive["nonkeyhash"] = Inputs(hidden, description="hash of the sensitive columns")
        sensitive["operation"] = Inputs(keys + hidden, "INDIRECT", "JOIN", "hashes compared")
        sensitive["eff_start_date"] = sensitive["operation"]
        found[names.sensitive_current] = sensitive
        found[names.sensitive_history] = {**sensitive, "business_date": NO_INPUTS}
    return found
