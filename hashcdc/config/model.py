"""A validated table config as frozen dataclasses: :class:`TableConfig` and its parts."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from hashcdc.config.schema import (
    CHANGES_FIELDS,
    CSV_OPTION_DEFAULTS,
    DEBEZIUM_UNAVAILABLE_VALUE,
    SOURCE_FIELDS,
    TABLE_FIELDS,
)
from hashcdc.relations import Relations


@dataclass(frozen=True)
class ColumnConfig:
    """One configured column of a table."""

    name: str
    type: str
    key: bool = False
    ignore: bool = False
    nullable: bool = True
    description: str = ""
    format: str | None = None
    source_name: str | None = None
    encoding: str | None = None
    source_scale: int | None = None
    added: str | None = None
    added_as_update: bool = False
    removed: str | None = None
    renamed_from: tuple[str, ...] = ()
    widened_from: str | None = None
    widened_since: str | None = None
    sensitive: bool = False

    @property
    def source_field(self) -> str:
        """The column's name in the extract (header, parquet column or JSON field)."""
        return self.source_name or self.name

    @property
    def source_fields(self) -> tuple[str, ...]:
        """The names the column may have in an extract: its own, then its earlier ones."""
        return (self.source_field, *reversed(self.renamed_from))

    @property
    def hash_name(self) -> str:
        """The name its values are hashed under: the first it had, so a rename keeps hashes."""
        return self.renamed_from[0] if self.renamed_from else self.name

    def is_present_on(self, business_date: str) -> bool:
        """Whether the extract of a business date carries the column (added/removed)."""
        after_added = self.added is None or business_date >= self.added
        before_removed = self.removed is None or business_date < self.removed
        return after_added and before_removed

    def type_on(self, business_date: str) -> str:
        """The type the extract of a date is read with (before a widening, the earlier one)."""
        if self.widened_from and self.widened_since and business_date < self.widened_since:
            return self.widened_from
        return self.type


@dataclass(frozen=True)
class DatabaseSource:
    """A live database table: ``hashcdc extract`` snapshots it, ``hashcdc capture`` streams it."""

    kind: str
    database: str
    user_env: str
    host: str = "127.0.0.1"
    port: int | None = None
    table: str | None = None
    query: str | None = None
    password_env: str | None = None
    partition_column: str | None = None
    partitions: int = 1
    fetch_size: int = 10_000
    slot: str | None = None
    publication: str | None = None

    @property
    def capture_slot(self) -> str:
        """The replication slot ``hashcdc capture`` reads (``slot``, else per database)."""
        return self.slot or f"hashcdc_{self.database}".lower()

    @property
    def capture_publication(self) -> str:
        """The publication of the slot's tables (``publication``, else the slot's name)."""
        return self.publication or self.capture_slot


@dataclass(frozen=True)
class SourceConfig:
    """Where a table's extract for a business date lands and how to parse it."""

    path: str
    format: str = SOURCE_FIELDS["format"]["default"]
    csv: dict[str, Any] = field(default_factory=lambda: dict(CSV_OPTION_DEFAULTS))
    database: DatabaseSource | None = None

    def path_for(self, business_date: str) -> str:
        """The source path (file, folder or glob) for one business date."""
        return self.path.replace("{business_date}", business_date)


@dataclass(frozen=True)
class SequenceField:
    """One field of a change feed's sequence, compared in the order of ``sequence_by``."""

    field: str
    type: str = "bigint"
    # "lowest": an event without the field sorts before every event that has it (SQL
    # Server's snapshot reads carry commit_lsn only); None: such an event is rejected.
    missing: str | None = None

    @property
    def alias(self) -> str:
        """The field's name inside the ``event_sequence`` struct."""
        return re.sub(r"[^A-Za-z0-9_]", "_", self.field).lower()


@dataclass(frozen=True)
class ChangesConfig:
    """How to read and order the events of an ``extract_type: changes`` table."""

    sequence_by: tuple[SequenceField, ...]
    operation_column: str | None = None
    history: str = CHANGES_FIELDS["history"]["default"]
    unavailable_value: str | None = DEBEZIUM_UNAVAILABLE_VALUE


@dataclass(frozen=True)
class TableConfig:
    """A validated table config."""

    name: str
    extract_type: str
    source: SourceConfig
    columns: tuple[ColumnConfig, ...]
    description: str = ""
    expected_counts_seed: str | None = None
    max_delete_fraction: float = TABLE_FIELDS["max_delete_fraction"]["default"]
    max_reject_fraction: float = TABLE_FIELDS["max_reject_fraction"]["default"]
    max_rejects: int | None = None
    duplicates_keep_last_by: str | None = None
    changelog: bool = TABLE_FIELDS["changelog"]["default"]
    changes: ChangesConfig | None = None
    sensitive_grants: dict[str, list[str]] | None = None
    buckets: int | None = None
    enabled: bool = TABLE_FIELDS["enabled"]["default"]
    history_retention_days: int | None = None
    rejects_retention_days: int | None = None
    config_file: str = ""

    @property
    def relations(self) -> Relations:
        """The names of the table's models and tables (:mod:`hashcdc.relations`)."""
        return Relations(self.name)

    @property
    def is_feed(self) -> bool:
        """Whether the extracts are change events rather than rows."""
        return self.extract_type == "changes"

    @property
    def is_keyless(self) -> bool:
        """A feed table without a primary key.

        All compared columns form the identity, and identical rows are counted (``copies``).
        """
        return self.is_feed and not any(c.key for c in self.columns)

    @property
    def key_columns(self) -> tuple[ColumnConfig, ...]:
        """Columns that identify a row; hashed into ``keyhash``."""
        if self.is_keyless:
            return tuple(c for c in self.columns if not c.ignore)
        return tuple(c for c in self.columns if c.key)

    @property
    def compared_columns(self) -> tuple[ColumnConfig, ...]:
        """Non-key, non-sensitive columns that take part in change detection (``nonkeyhash``)."""
        if self.is_keyless:
            return ()
        return tuple(c for c in self.columns if not c.key and not c.ignore and not c.sensitive)

    @property
    def sensitive_columns(self) -> tuple[ColumnConfig, ...]:
        """Columns stored only in the sensitive tables (their own hash: ``sensitive_hash``)."""
        return tuple(c for c in self.columns if c.sensitive)

    @property
    def main_columns(self) -> tuple[ColumnConfig, ...]:
        """The columns of the main tables (state, current, history, changelog)."""
        return tuple(c for c in self.columns if not c.sensitive)

    def as_read_on(self, business_date: str) -> TableConfig:
        """The table as the extract of a business date carries it.

        Only the columns present on that date (``added``/``removed``), each with the type it
        is read with (``widened``).
        """
        columns = tuple(
            dataclasses.replace(c, type=c.type_on(business_date))
            for c in self.columns
            if c.is_present_on(business_date)
        )
        return dataclasses.replace(self, columns=columns)

    @property
    def source_fields(self) -> list[tuple[tuple[str, ...], str]]:
        """(names in the extract, name in the lake) of each csv/parquet column, in order.

        A renamed column may carry any of its names (its own first).
        """
        fields = [(c.source_fields, c.name) for c in self.columns]
        if self.changes is None or self.changes.operation_column is None:
            return fields
        names = {c.name for c in self.columns}
        extra = [self.changes.operation_column]
        extra += [f.field for f in self.changes.sequence_by if f.field not in names]
        seen: set[str] = set()
        for name in extra:
            if name not in names and name not in seen:
                fields.append(((name,), name))
                seen.add(name)
        return fields

    def to_dict(self) -> dict[str, Any]:
        """A plain-data form, embedded in generated model properties."""
        data = asdict(self)
        # A column's fields at their defaults are left out: they are filled in again.
        defaults = asdict(ColumnConfig(name="", type=""))
        data["columns"] = [
            {k: v for k, v in asdict(c).items() if k in ("name", "type") or v != defaults[k]}
            for c in self.columns
        ]
        if self.source.database is None:
            del data["source"]["database"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableConfig:
        """Rebuild a config from :meth:`to_dict` output (already validated)."""
        database = data["source"].get("database")
        source = SourceConfig(
            **{**data["source"], "database": DatabaseSource(**database) if database else None}
        )
        columns = tuple(
            ColumnConfig(**{**c, "renamed_from": tuple(c.get("renamed_from") or ())})
            for c in data["columns"]
        )
        changes = None
        if data.get("changes"):
            raw = dict(data["changes"])
            raw["sequence_by"] = tuple(SequenceField(**f) for f in raw["sequence_by"])
            changes = ChangesConfig(**raw)
        fields = {k: v for k, v in data.items() if k not in ("source", "columns", "changes")}
        return cls(source=source, columns=columns, changes=changes, **fields)
