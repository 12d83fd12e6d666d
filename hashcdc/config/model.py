"""A validated table config as frozen dataclasses: :class:`TableConfig` and its parts.

Each field a YAML file may give is declared here once, with :func:`setting`: its type,
default, description, constraints and message. The JSON Schema of ``tables/<name>.yml``
and the defaults are derived from these declarations (:mod:`hashcdc.config.declaration`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

from hashcdc.config.declaration import build, setting
from hashcdc.relations import Relations

NAME = "^[a-z_][a-z0-9_]*$"
FIELD_PATH = "^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$"
DATE = "^\\d{4}-\\d{2}-\\d{2}$"
ENVIRONMENT_NAME = "^[A-Za-z_][A-Za-z0-9_]*$"
IDENTIFIER_MESSAGE = "must be a lower-case identifier (letters, digits, _), got {value!r}"
BOOLEAN_MESSAGE = "must be true or false, got {value!r}"
PATH_MESSAGE = "must be a path template containing {business_date}, got {value!r}"
RENAMED_MESSAGE = (
    "must be the column's earlier name (or a list of them, oldest first), got {value!r}"
)
# What Debezium sends for a value it cannot read (unchanged TOASTed PostgreSQL columns).
DEBEZIUM_UNAVAILABLE_VALUE = "__debezium_unavailable_value"


@dataclass(frozen=True, kw_only=True)
class ColumnConfig:
    """One configured column of a table."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "column",
        "x-unknown": "unknown field",
        "x-message": "must be a mapping with at least 'name' and 'type'",
    }
    SPELLINGS: ClassVar[dict[str, tuple[str, dict[str, Any]]]] = {
        "target_type": (
            "type",
            {"description": "The article's spelling of type.", "type": "string"},
        ),
        "widened": (
            "renamed_from",
            {
                "description": "The column's type was widened (e.g. float to double, date to "
                "timestamp): its earlier type and the first business date with the new one. "
                "Extracts before it are read as before.",
                "type": "object",
                "x-unknown": "unknown field",
                "x-message": "must be a mapping {from: <earlier type>, since: <first date of "
                "the new type>}",
                "required": ["from", "since"],
                "properties": {
                    "from": {
                        "type": "string",
                        "description": "The earlier type.",
                        "x-message": "must be the earlier type, got {value!r}",
                    },
                    "since": {
                        "type": "string",
                        "pattern": DATE,
                        "format": "date",
                        "description": "The first business date read with the new type.",
                        "x-message": "must be the first business date (YYYY-MM-DD, quoted) of "
                        "the new type, got {value!r}",
                    },
                },
                "additionalProperties": False,
            },
        ),
    }

    name: str = setting(
        description="A lower-case identifier; hashcdc's own column names are reserved.",
        pattern=NAME,
        message=IDENTIFIER_MESSAGE,
    )
    # Not required by the schema: the article spells it target_type (a rule checks one is given).
    type: str = setting(
        description="The column's type (the type registry describes them).", required=False
    )
    key: bool = setting(
        False,
        description="Part of the row's identity (keyhash); keys are never null.",
        message=BOOLEAN_MESSAGE,
    )
    ignore: bool = setting(
        False,
        description="Operational column: typed and carried, not compared.",
        message=BOOLEAN_MESSAGE,
    )
    nullable: bool = setting(
        True,
        description="Default true (false for keys): an empty value fails the row.",
        show_default=False,
        message=BOOLEAN_MESSAGE,
    )
    description: str = setting(
        "", description="Shown in dbt docs.", schema={"type": ["string", "null"]}
    )
    format: str | None = setting(
        None,
        description="A Spark datetime pattern for date/timestamp columns, or epoch_days, "
        "epoch_seconds, epoch_millis, epoch_micros.",
        message="a format is a string, for date and timestamp columns only",
    )
    source_name: str | None = setting(
        None,
        description="The field's name in the extract when it differs from the column's.",
        pattern="\\S",
        message="must be the field's name in the extract, got {value!r}",
    )
    encoding: Literal["debezium_decimal", "debezium_variable_decimal"] | None = setting(
        None,
        description="Decimals in a connector's binary form without a schema: debezium_decimal "
        "(base64 bytes) or debezium_variable_decimal ({scale, value}).",
        message="must be one of debezium_decimal, debezium_variable_decimal, got {value!r}",
    )
    source_scale: int | None = setting(
        None,
        description="With encoding: debezium_decimal, the source column's scale when it "
        "differs from the type's.",
        minimum=0,
        maximum=38,
        message="must be a whole number 0-38, got {value!r}",
    )
    added: str | None = setting(
        None,
        description="The first business date whose extract carries the column (a column added "
        "to the table). Extracts of earlier dates load without it (null); rows whose only "
        "difference is the column's first value are not updates.",
        schema={"type": "string"},
        pattern=DATE,
        format="date",
        message="must be the first business date (YYYY-MM-DD, quoted) whose extract carries "
        "the column, got {value!r}",
    )
    added_as_update: bool = setting(
        False,
        description="With added: a row's first value of the new column makes the row an "
        "update (U) instead of keeping its version.",
        message=BOOLEAN_MESSAGE,
    )
    removed: str | None = setting(
        None,
        description="The first business date whose extract no longer carries the column. The "
        "column stays in every table, null for later rows; its disappearance is not a change.",
        schema={"type": "string"},
        pattern=DATE,
        format="date",
        message="must be the first business date (YYYY-MM-DD, quoted) whose extract lacks the "
        "column, got {value!r}",
    )
    renamed_from: tuple[str, ...] = setting(
        (),
        description="The column's earlier name(s), oldest first: its values, history and "
        "hashes are kept under the new name; an extract may carry either name.",
        show_default=False,
        schema={
            "oneOf": [
                {"type": "string", "pattern": NAME, "x-message": RENAMED_MESSAGE},
                {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "pattern": NAME, "x-message": RENAMED_MESSAGE},
                    "x-message": RENAMED_MESSAGE,
                },
            ]
        },
        message=RENAMED_MESSAGE,
    )
    sensitive: bool = setting(
        False,
        description="Stored only in <name>_sensitive_current and <name>_sensitive_history "
        "(keyed by keyhash and effective date), never in the main tables.",
        message=BOOLEAN_MESSAGE,
    )
    # From the YAML's widened: {from, since}.
    widened_from: str | None = None
    widened_since: str | None = None

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


@dataclass(frozen=True, kw_only=True)
class DatabaseSource:
    """A live database table: ``hashcdc extract`` snapshots it, ``hashcdc capture`` streams it."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "database",
        "description": "A live database table: `hashcdc extract` reads a business date's "
        "extract from it (through Spark's JDBC source) and lands it at source.path; for "
        "extract_type changes, `hashcdc capture` streams its changes from the log as Debezium "
        "events. Credentials come from environment variables, never from this file.",
        "x-unknown": "unknown database field",
        "x-message": "must be a mapping {kind, host, port, database, table or query, user_env, "
        "password_env, ...}",
    }

    kind: Literal["postgresql", "mariadb"] = setting(
        description="The database server: postgresql, or mariadb (MariaDB or MySQL).",
        message="must be postgresql or mariadb, got {value!r}",
    )
    host: str = setting(
        "127.0.0.1",
        description="The server's host name or address.",
        message="must be a host name, got {value!r}",
    )
    port: int | None = setting(
        None,
        description="The server's port (default: 5432 for postgresql, 3306 for mariadb).",
        show_default=True,
        minimum=1,
        maximum=65535,
        message="must be a port number, got {value!r}",
    )
    database: str = setting(
        description="The database (catalog) holding the table.",
        message="must be the database's name, got {value!r}",
    )
    table: str | None = setting(
        None,
        description="The table to read, schema-qualified where needed (public.customers); its "
        "configured columns are selected by their source names.",
        show_default=True,
        message="must be a table name, got {value!r}",
    )
    query: str | None = setting(
        None,
        description="A query whose result is the extract, instead of table.",
        show_default=True,
        message="must be an SQL query, got {value!r}",
    )
    user_env: str = setting(
        description="The name of the environment variable holding the user name.",
        pattern=ENVIRONMENT_NAME,
        message="must be the name of an environment variable, got {value!r}",
    )
    password_env: str | None = setting(
        None,
        description="The name of the environment variable holding the password (none: no "
        "password).",
        show_default=True,
        pattern=ENVIRONMENT_NAME,
        message="must be the name of an environment variable, got {value!r}",
    )
    partition_column: str | None = setting(
        None,
        description="A numeric or date column (its source name) whose range is split for "
        "parallel reads; postgresql reads every part in one exported snapshot.",
        show_default=True,
        message="must be a column name, got {value!r}",
    )
    partitions: int = setting(
        1,
        description="How many parallel reads (connections): ranges of partition_column for "
        "`hashcdc extract`; page ranges of the snapshot for `hashcdc capture` from postgresql.",
        minimum=1,
        maximum=1024,
        message="must be a whole number from 1 to 1024, got {value!r}",
    )
    fetch_size: int = setting(
        10_000,
        description="Rows fetched per round trip.",
        minimum=1,
        message="must be a positive whole number, got {value!r}",
    )
    slot: str | None = setting(
        None,
        description="`hashcdc capture`: the logical replication slot (default "
        "hashcdc_<database>); tables with the same slot are captured together.",
        show_default=True,
        pattern="^[a-z0-9_]{1,63}$",
        message="must be a slot name (lower-case letters, digits, _), got {value!r}",
    )
    publication: str | None = setting(
        None,
        description="`hashcdc capture`: the publication of the slot's tables (default: the "
        "slot's name); made on the first start.",
        show_default=True,
        pattern="^[a-z0-9_]{1,63}$",
        message="must be a publication name (lower-case letters, digits, _), got {value!r}",
    )

    @property
    def capture_slot(self) -> str:
        """The replication slot ``hashcdc capture`` reads (``slot``, else per database)."""
        return self.slot or f"hashcdc_{self.database}".lower()

    @property
    def capture_publication(self) -> str:
        """The publication of the slot's tables (``publication``, else the slot's name)."""
        return self.publication or self.capture_slot


@dataclass(frozen=True, kw_only=True)
class KafkaSource:
    """A Kafka topic of Debezium events: read through Spark's Kafka source, no landing."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "kafka",
        "description": "A Kafka topic of the table's Debezium events (JSON, with or without "
        "the schema wrapper; one topic per table as Debezium names them). A business date "
        "reads the events whose commit time falls in it; Kafka offsets are not kept: each "
        "event is applied once by the state's sequence watermark.",
        "x-unknown": "unknown kafka field",
        "x-message": "must be a mapping {bootstrap_servers, topic, options, clock_skew_seconds}",
    }

    bootstrap_servers: str = setting(
        description="The brokers to reach first, host:port[,host:port...].",
        pattern="^[^,\\s]+:[0-9]+(,[^,\\s]+:[0-9]+)*$",
        message="must be host:port[,host:port...], got {value!r}",
    )
    topic: str = setting(
        description="The table's topic (Debezium: <prefix>.<schema>.<table>).",
        pattern="^[A-Za-z0-9._-]{1,249}$",
        message="must be a Kafka topic name, got {value!r}",
    )
    options: dict[str, str] = setting(
        factory=dict,
        description="More consumer settings, as Kafka names them (security.protocol, "
        "sasl.mechanism, ...): given to Spark's Kafka source as kafka.<name>.",
        schema={"type": "object", "additionalProperties": {"type": "string"}},
        show_default=False,
    )
    clock_skew_seconds: int = setting(
        60,
        description="How much earlier than its source commit an event's Kafka timestamp may "
        "be (the clocks of the database and the producer differ): a date's read starts this "
        "long before the date.",
        minimum=0,
        message="must be a whole number of seconds, got {value!r}",
    )


@dataclass(frozen=True, kw_only=True)
class SourceConfig:
    """Where a table's extract for a business date lands and how to parse it."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "source",
        "x-unknown": "unknown field",
        "x-message": "missing; give source.path with {business_date} in it, or source.kafka",
    }

    path: str | None = setting(
        None,
        description="File, folder or glob with {business_date} in it; relative paths are taken "
        "from the project folder. Not with kafka.",
        pattern="\\{business_date\\}",
        message=PATH_MESSAGE,
        show_default=False,
    )
    # Its description, values and message come from the readers (hashcdc.registries).
    format: str = setting("csv", schema={"enum": ["csv"]})
    # The csv reader declares its options (hashcdc.pipeline.inputs.csv.CsvOptions); the
    # loader fills in their defaults from the schema.
    csv: dict[str, Any] = setting(factory=dict, schema={"$ref": "#/$defs/csv"}, show_default=False)
    database: DatabaseSource | None = setting(None)
    kafka: KafkaSource | None = setting(None)

    def path_for(self, business_date: str) -> str:
        """The source path (file, folder or glob) for one business date."""
        if self.path is None:
            raise ValueError("a source read from Kafka has no path")
        return self.path.replace("{business_date}", business_date)


@dataclass(frozen=True, kw_only=True)
class SequenceField:
    """One field of a change feed's sequence, compared in the order of ``sequence_by``."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "sequence_field",
        "description": "A dotted field path (source.lsn), or {field, type, missing}.",
        "x-message": "must be a field path (e.g. source.lsn) or {field: ..., type: ...}",
        "x-unknown": "unknown field",
        "alternatives": [{"type": "string", "pattern": FIELD_PATH}],
    }

    field: str = setting(
        pattern=FIELD_PATH, message="must be a field path like source.lsn, got {value!r}"
    )
    type: str = setting(
        "bigint",
        description="bigint unless given (source.file and __file: string).",
        show_default=False,
    )
    # "lowest": an event without the field sorts before every event that has it (SQL
    # Server's snapshot reads carry commit_lsn only); None: such an event is rejected.
    missing: Literal["lowest"] | None = setting(
        None,
        description="lowest: an event without the field sorts before every event that has it.",
        message="must be 'lowest' (or left out), got {value!r}",
    )

    @property
    def alias(self) -> str:
        """The field's name inside the ``event_sequence`` struct."""
        return re.sub(r"[^A-Za-z0-9_]", "_", self.field).lower()


@dataclass(frozen=True, kw_only=True)
class ChangesConfig:
    """How to read and order the events of an ``extract_type: changes`` table."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "changes",
        "description": "How to read and order the events of an extract_type: changes table.",
        "x-unknown": "unknown field",
        "x-message": "missing: a change feed needs changes.sequence_by, the event fields that "
        "order its events (e.g. [source.lsn], or [source.file, source.pos] for a MySQL binlog)",
    }

    # Not required by the schema: a rule says what a change feed lacks without it.
    sequence_by: tuple[SequenceField, ...] = setting(
        description="The event fields that order the log, compared in order (one field may be "
        "given as a string).",
        schema={"type": ["array", "string"], "items": {"$ref": "#/$defs/sequence_field"}},
        required=False,
        minItems=1,
        pattern=FIELD_PATH,
        message="must be a non-empty list of event fields",
    )
    operation_column: str | None = setting(
        None,
        description="csv/parquet feeds: the column holding the operation (c/u/d/r/t or "
        "insert/update/delete/read/truncate).",
        pattern=NAME,
        message="must be a column name (a lower-case identifier), got {value!r}",
    )
    history: Literal["net", "audit"] = setting(
        "net",
        description="net: the net change of each key per date; audit: every applied event.",
        message="must be one of net, audit, got {value!r}",
    )
    unavailable_value: str | None = setting(
        DEBEZIUM_UNAVAILABLE_VALUE,
        description="The connector's placeholder for a value it could not read (null turns it "
        "off).",
        minLength=1,
        message="must be the connector's placeholder text (or null to turn it off), got {value!r}",
    )
    time_zone: str = setting(
        "UTC",
        description="The time zone of the table's business dates: an event belongs to the date "
        "its source commit has in this zone (an IANA name, e.g. Europe/Berlin). Used where "
        "hashcdc assigns the dates: `hashcdc capture`'s landing folders and a Kafka topic's "
        "dates; a landing folder written by hand is its own date.",
        minLength=1,
        message="must be an IANA time zone name (UTC, Europe/Berlin, ...), got {value!r}",
    )


# A duration as a service level states it: a number and its unit (s, m, h or d).
DURATION = "^[0-9]+(\\.[0-9]+)?(s|m|h|d)$"
DURATION_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> float:
    """``90s``, ``5m``, ``1.5h``, ``1d`` in seconds (the text matches :data:`DURATION`)."""
    return float(text[:-1]) * DURATION_SECONDS[text[-1]]


@dataclass(frozen=True, kw_only=True)
class ServiceLevel:
    """An objective for how far a table may trail its source (``hashcdc status --check``)."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "slo",
        "description": "A service level: `percent` of the table's changes are visible within "
        "`within` of their source commit (a streamed table: each micro-batch's oldest event; "
        "a daily table: each date's commit after the date's end). `hashcdc status` shows how "
        "often it held; `hashcdc status --check` exits non-zero when it does not.",
        "x-unknown": "unknown field",
        "x-message": "must be {within: <duration>, percent: <number>}, e.g. {within: 5m, "
        "percent: 99}",
    }

    within: str = setting(
        description="How long after its source commit a change must be visible: a number and "
        "s, m, h or d (30s, 5m, 2h, 1d).",
        pattern=DURATION,
        message="must be a duration like 30s, 5m, 2h or 1d, got {value!r}",
    )
    percent: float = setting(
        99.0,
        description="How often it must hold, in percent (of micro-batches, or of dates).",
        exclusiveMinimum=0,
        maximum=100,
        message="must be a percentage above 0 and at most 100, got {value!r}",
    )

    @property
    def seconds(self) -> float:
        """``within`` in seconds."""
        return duration_seconds(self.within)


@dataclass(frozen=True, kw_only=True)
class TableConfig:
    """A validated table config."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "name": "table",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "hashcdc/tables.schema.json",
        "title": "hashcdc table config (tables/<name>.yml)",
        "description": "One table: where its daily extract lands, how to parse it, its columns "
        "and how each business date's extract is compared with the previous state. Rules that "
        "involve several fields (a key column cannot be ignored, a format only for dates, ...) "
        "are checked by `hashcdc validate` as well.",
        "x-unknown": "unknown field",
    }
    SPELLINGS: ClassVar[dict[str, tuple[str, dict[str, Any]]]] = {
        "delimiter": (
            "columns",
            {
                "description": "The article's spelling of source.csv.delimiter.",
                "type": "string",
                "minLength": 1,
                "maxLength": 1,
                "x-message": "must be a single character, got {value!r}",
            },
        ),
    }

    name: str = setting(
        description="The table's name; must match the file name (tables/<name>.yml).",
        pattern=NAME,
        message=IDENTIFIER_MESSAGE,
    )
    description: str = setting(
        "", description="Shown in dbt docs.", schema={"type": ["string", "null"]}
    )
    extract_type: Literal["full", "delta", "changes"] = setting(
        description="full: keys missing from the extract are deleted (D); delta: keys missing "
        "are kept as they were (X); changes: a feed of change events.",
        message="must be one of full, delta, changes, got {value!r}",
    )
    source: SourceConfig = setting(
        description="Where the extract of a business date lands and how to parse it (a string "
        "is the path).",
        schema={
            "oneOf": [
                {"type": "string", "pattern": "\\{business_date\\}", "x-message": PATH_MESSAGE},
                {"$ref": "#/$defs/source"},
            ]
        },
        message="missing; give at least source.path with {business_date} in it",
    )
    columns: tuple[ColumnConfig, ...] = setting(
        description="The table's columns, in the extract's order.",
        minItems=1,
        message="must be a non-empty list of columns",
    )
    expected_counts_seed: str | None = setting(
        None,
        description="A seed of expected operation counts per date, checked by a dbt test.",
        pattern=NAME,
        message="must be a seed name, got {value!r}",
    )
    buckets: int | None = setting(
        None,
        description="Buckets (by keyhash) of the stage table: one file per bucket per date, and "
        "as many parallel tasks in the day's join. Aim for 128-256 MiB of stage per bucket "
        "(docs/performance.md#file-layout). Default: the dbt var hashcdc_buckets (8).",
        schema={"type": "integer"},
        minimum=1,
        maximum=4096,
        message="must be a whole number of buckets from 1 to 4096, got {value!r}",
    )
    enabled: bool = setting(
        True,
        description="false pauses the table: every run (hashcdc or dbt) skips its models, and "
        "its tables stay as they are. Set it back to true (or remove it) to resume: the next "
        "date's extract is compared with the last state.",
        message=BOOLEAN_MESSAGE,
    )
    history_retention_days: int | None = setting(
        None,
        description="Optional: keep the history (and changelog) partitions of this many days "
        "before each run's business date; older ones are dropped after the run. Default: kept "
        "for ever. The scd2 view then starts at the oldest kept date.",
        minimum=1,
        message="must be a whole number of days (at least 1), got {value!r}",
    )
    rejects_retention_days: int | None = setting(
        None,
        description="Optional: keep the rejects partitions of this many days before each run's "
        "business date; older ones are dropped after the run. Default: kept for ever.",
        minimum=1,
        message="must be a whole number of days (at least 1), got {value!r}",
    )
    max_delete_fraction: float = setting(
        0.5,
        description="Full extracts deleting more than this share of the current rows are "
        "refused (1 turns the guard off).",
        minimum=0,
        maximum=1,
        message="must be a number from 0 to 1 (1 turns the guard off), got {value!r}",
    )
    max_reject_fraction: float = setting(
        0.01,
        description="Above this share of rejected rows the run stops. Default 0.01, or 1 when "
        "only max_rejects is given.",
        minimum=0,
        maximum=1,
        message="must be a number from 0 (no rejects allowed) to 1, got {value!r}",
    )
    max_rejects: int | None = setting(
        None,
        description="Above this count of rejected rows the run stops.",
        minimum=0,
        message="must be a whole number >= 0, got {value!r}",
    )
    duplicates_keep_last_by: str | None = setting(
        None,
        description="Of the rows sharing a key, keep the one with the latest value of this "
        "non-key column and quarantine the rest.",
        message="must name a configured column, got {value!r}",
    )
    changelog: bool = setting(
        False,
        description="Also write <name>_changelog (before and after images of each change).",
        message=BOOLEAN_MESSAGE,
    )
    changes: ChangesConfig | None = setting(None)
    group: str | None = setting(
        None,
        description="Optional: the table group this table belongs to. A group's tables are "
        "run as one: one stage, one diff, one commit of the group's state and history for all "
        "of them, so a date costs the rows that changed, not the number of tables. Each table "
        "still reads as its own <name>_current, _history, _scd2, _rejects (and _changelog). "
        "The tables of a group are all full extracts, all deltas or all change feeds of one "
        "order and transport (README, 'Table groups').",
        pattern=NAME,
        message=IDENTIFIER_MESSAGE,
    )
    slo: ServiceLevel | None = setting(
        None,
        description="Optional: the table's service level, e.g. {within: 5m, percent: 99} "
        "(default: the project's var hashcdc_slo, else none).",
    )
    retry_for: str | None = setting(
        None,
        description="Optional: how long `hashcdc stream` retries the table's transient "
        "failures (a broker away, a busy metastore, a concurrent commit), with backoff, "
        "before it pauses the table: a duration like 30s, 5m, 2h (default: the project's var "
        "hashcdc_retry_for, else 5m).",
        pattern=DURATION,
        message="must be a duration like 30s, 5m, 2h or 1d, got {value!r}",
    )
    sensitive_grants: dict[str, list[str]] | None = setting(
        None,
        description="dbt grants of the sensitive models (e.g. {select: [pii_readers]}), where "
        "the catalog supports them.",
        additionalProperties={"type": "array", "items": {"type": "string"}},
        message="must map a privilege to a list of grantees, e.g. {select: [pii_readers]}, got "
        "{value!r}",
    )
    # Where the config was read from (not a field of the file).
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
    def time_zone(self) -> str:
        """The zone of the table's business dates (``changes.time_zone``; UTC for extracts)."""
        return self.changes.time_zone if self.changes is not None else "UTC"

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
        if self.group is None:
            del data["group"]
        if self.slo is None:
            del data["slo"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableConfig:
        """Rebuild a config from :meth:`to_dict` output (already validated)."""
        table: TableConfig = build(cls, data)
        return table
