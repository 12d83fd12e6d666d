"""The names of a configured table's relations: every one is built here and nowhere else.

A table ``orders`` has the stage ``stg_orders`` (kept in the Spark session), the tables
``orders_rejects``, ``orders_state``, ``orders_history`` (and ``orders_changelog``), the
views ``orders_current`` and ``orders_scd2``, and, with sensitive columns,
``orders_sensitive_state``, ``orders_sensitive_history`` and ``orders_sensitive_current``.
The generator renders the model files with these names, and the commands read the tables
by them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import overload

# The column that names a row's member table in a group's stage, state and history.
MEMBER_COLUMN = "table_name"
STAGE_PREFIX = "stg_"
STATE_SUFFIX = "_state"


class _Name:
    """A relation name of a table, from a pattern with ``{table}``: a read-only attribute."""

    def __init__(self, pattern: str, doc: str) -> None:
        self.pattern = pattern
        self.__doc__ = doc

    @overload
    def __get__(self, relations: None, owner: type) -> _Name: ...

    @overload
    def __get__(self, relations: Relations, owner: type) -> str: ...

    def __get__(self, relations: Relations | None, owner: type) -> str | _Name:
        if relations is None:
            return self
        return relations.qualified(self.pattern.format(table=relations.table))


@dataclass(frozen=True)
class Relations:
    """The relations of one table, qualified by ``schema`` when one is given."""

    table: str
    schema: str | None = None

    stage = _Name(STAGE_PREFIX + "{table}", "The stage model (a temporary view of the session).")
    rejects = _Name("{table}_rejects", "The rejected rows of every date.")
    state = _Name("{table}" + STATE_SUFFIX, "Every key's latest row and each date's W row.")
    current = _Name("{table}_current", "The view of the state's live rows.")
    history = _Name("{table}_history", "The change rows of every date.")
    scd2 = _Name("{table}_scd2", "The view of every version's validity.")
    changelog = _Name("{table}_changelog", "Before and after images (``changelog: true``).")
    sensitive_state = _Name("{table}_sensitive_state", "The sensitive columns' state.")
    sensitive_history = _Name("{table}_sensitive_history", "The sensitive columns' history.")
    sensitive_current = _Name("{table}_sensitive_current", "The sensitive columns' live rows.")

    def in_schema(self, schema: str) -> Relations:
        """The same relations, qualified by ``schema``."""
        return replace(self, schema=schema)

    def qualified(self, name: str) -> str:
        """``name`` in this object's schema, when it has one."""
        return f"{self.schema}.{name}" if self.schema else name


def is_state(relation: str) -> bool:
    """Whether a relation's name is that of a state table."""
    return relation.endswith(STATE_SUFFIX)
