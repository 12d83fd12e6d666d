"""Table configs (``tables/<name>.yml``): schema, loading and validation.

A table config says where a table's daily extract lands, how to parse it, which columns
it has (types, keys, columns ignored by change detection) and whether each extract is a
``full`` snapshot, a ``delta`` or a feed of ``changes`` (change events from a database log,
ordered by ``changes.sequence_by``). Validation collects *every* problem, each naming the file
and the field, so a user fixes a config in one pass.

Its parts, by concern: :mod:`~hashcdc.config.model` (the frozen :class:`TableConfig` and
its parts, where each field is declared once: type, default, description, constraints,
message), :mod:`~hashcdc.config.declaration` (how a declaration becomes the JSON Schema and
a config), :mod:`~hashcdc.config.schema` (``hashcdc/tables.schema.json``, the schema as
written from the declarations, and the problems a config has against it),
:mod:`~hashcdc.config.rules` (what fields say together) and :mod:`~hashcdc.config.loading`
(reading ``tables/*.yml``). The names below are the package's interface.
"""

from hashcdc.config.declaration import setting
from hashcdc.config.loading import load_table_configs, parse_table_config
from hashcdc.config.model import (
    DEBEZIUM_UNAVAILABLE_VALUE,
    ChangesConfig,
    ColumnConfig,
    DatabaseSource,
    KafkaSource,
    SequenceField,
    ServiceLevel,
    SourceConfig,
    TableConfig,
    duration_seconds,
)
from hashcdc.config.schema import (
    COLUMN_ENCODINGS,
    CSV_OPTION_DEFAULTS,
    EXTRACT_TYPES,
    NAME_PATTERN,
    OPERATION_SPELLINGS,
    RESERVED_COLUMNS,
    SCHEMA,
    SCHEMA_FILE,
    TEXT_SEQUENCE_FIELDS,
)

__all__ = [
    "COLUMN_ENCODINGS",
    "CSV_OPTION_DEFAULTS",
    "DEBEZIUM_UNAVAILABLE_VALUE",
    "EXTRACT_TYPES",
    "NAME_PATTERN",
    "OPERATION_SPELLINGS",
    "RESERVED_COLUMNS",
    "SCHEMA",
    "SCHEMA_FILE",
    "TEXT_SEQUENCE_FIELDS",
    "ChangesConfig",
    "ColumnConfig",
    "DatabaseSource",
    "KafkaSource",
    "SequenceField",
    "ServiceLevel",
    "SourceConfig",
    "TableConfig",
    "duration_seconds",
    "load_table_configs",
    "setting",
    "parse_table_config",
]
