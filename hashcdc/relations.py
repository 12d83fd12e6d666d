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

STAGE_PREFIX = "stg_"
STATE_SUFFIX = "_state"


@dataclass(frozen=True)
class Relations:
    """The relations of one table, qualified by ``schema`` when one is given."""

    table: str
    schema: str | None = None

    def in_schema(self, schema: str) -> Relations:
        """The same relations, qualified by ``schema``."""
        return replace(self, schema=schema)

    def _named(self, name: str) -> str:
        return f"{self.schema}.{name}" if self.schema else name

    @property
    def stage(self) -> str:
        """The stage model (a temporary view of the Spark session)."""
        return self._named(f"{STAGE_PREFIX}{self.table}")

    @property
    def rejects(self) -> str:
        """The rejected rows of every date."""
        return self._named(f"{self.table}_rejects")

    @property
    def state(self) -> str:
        """The state: every key's latest row, and each date's bookkeeping rows."""
        return self._named(f"{self.table}{STATE_SUFFIX}")

    @property
    def current(self) -> str:
        """The view of the state's live rows."""
        return self._named(f"{self.table}_current")

    @property
    def history(self) -> str:
        """The change rows of every date."""
        return self._named(f"{self.table}_history")

    @property
    def scd2(self) -> str:
        """The view of every version's validity."""
        return self._named(f"{self.table}_scd2")

    @property
    def changelog(self) -> str:
        """Before and after images of every change (``changelog: true``)."""
        return self._named(f"{self.table}_changelog")

    def sensitive(self, kind: str) -> str:
        """A sensitive table's own ``state``, ``history`` or ``current``."""
        return self._named(f"{self.table}_sensitive_{kind}")

    @property
    def sensitive_state(self) -> str:
        """The sensitive columns' state."""
        return self.sensitive("state")

    @property
    def sensitive_history(self) -> str:
        """The sensitive columns' history."""
        return self.sensitive("history")

    @property
    def sensitive_current(self) -> str:
        """The view of the sensitive columns' live rows."""
        return self.sensitive("current")


def is_state(relation: str) -> bool:
    """Whether a relation's name is that of a state table."""
    return relation.endswith(STATE_SUFFIX)
