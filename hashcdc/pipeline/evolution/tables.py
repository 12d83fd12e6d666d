"""Tables that follow the config: columns added, renamed and widened before a date is run.

The config is the contract; the tables follow it (docs/schema-evolution.md). The stage of
a table calls :func:`evolve_tables` before it reads anything, so every model of the date
finds its tables in the config's shape:

* a column the tables lack is added (``ALTER TABLE ... ADD COLUMNS``: metadata only;
  older files read it as null), also hashcdc's own columns a release adds (``seen_date``);
* a renamed column, a widened type and a column added to the changelog's images need
  the table rewritten: every persisted table is a Delta table (the stage upgrades an
  earlier release's parquet ones first), replaced with the new shape in one commit that
  keeps its versions. A copy-and-swap an earlier release (or the upgrade's) left half-way
  is finished or discarded by the next run (:func:`_finish_rewrite`);
* a state table whose bucket count differs from the config's ``buckets`` is rewritten
  into the new count the same way (docs/performance.md#file-layout);
* a narrowing or an incompatible change, or a sensitive column still stored in a main
  table, is refused before anything is written, saying what to do.

Columns are never dropped: a column ``removed`` from the source stays in every table.

A column appended to the config without ``added:`` is recognised as added by
:func:`infer_additions`: the tables lack it, so the first date whose extract carries it is
the date it was added. That date is recorded on the state table (table property
``hashcdc.added.<column>``) before the column is added, so later runs, replays and the
state macros (``_with_recorded_additions``) know it as if the config said it.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from hashcdc.column_types import type_change_problem
from hashcdc.config import ColumnConfig, TableConfig
from hashcdc.errors import ConfigError, HashcdcError
from hashcdc.pipeline.hashing import HASH_ALGORITHM_VERSION
from hashcdc.relations import is_state
from hashcdc.state.versions import (
    ADDED_PROPERTY_PREFIX,
    applied_versions,
    history_properties,
    own_properties,
    replace_delta,
    state_properties,
)

# hashcdc's own columns a table kind carries besides the configured ones (name -> type),
# added to tables written by an earlier release.
STATE_OWN_COLUMNS = {"seen_date": "date"}
# The changelog's struct columns holding a row's image.
IMAGE_COLUMNS = ("before_image", "after_image")
# The changelog's list of the names of the columns a change touched.
CHANGED_COLUMNS = "changed_columns"
REWRITE_SUFFIX = "__hashcdc_rewrite"
RETIRED_SUFFIX = "__hashcdc_retired"


@dataclass(frozen=True)
class PersistedTable:
    """A table a table config's models write, and the configured columns it holds."""

    name: str
    columns: tuple[ColumnConfig, ...]
    own_columns: dict[str, str]
    has_images: bool = False


def persisted_tables(schema: str, table: TableConfig) -> list[PersistedTable]:
    """The tables (not views) that hold a table's rows, in the schema of its models."""
    main, sensitive = table.main_columns, table.sensitive_columns
    names = table.relations.in_schema(schema)
    tables = [
        PersistedTable(names.state, main, STATE_OWN_COLUMNS),
        PersistedTable(names.history, main, {}),
        PersistedTable(names.changelog, main, {}, has_images=True),
    ]
    if sensitive:
        tables += [
            PersistedTable(names.sensitive_state, sensitive, STATE_OWN_COLUMNS),
            PersistedTable(names.sensitive_history, sensitive, {}),
        ]
    return tables


def infer_additions(
    spark: SparkSession, schema: str, table: TableConfig, business_date: str
) -> tuple[TableConfig, list[str]]:
    """The config with every column's ``added`` date, recorded or inferred for this date.

    A column without ``added`` takes the date recorded on the state table for it; one the
    tables lack (and no recorded date) was appended to the config without ceremony: its
    first date is this one. Returns the config and the columns inferred now (to record
    with :func:`record_additions` once the extract is known to carry them).

    Raises
    ------
    ConfigError
        When the date is not after the latest processed one (a replay, a late date): the
        first date cannot be inferred; the message gives the YAML line to add.

    """
    names = table.relations.in_schema(schema)
    state = names.state
    if not spark.catalog.tableExists(state):
        return table, []
    recorded = {
        key.removeprefix(ADDED_PROPERTY_PREFIX): value
        for key, value in own_properties(spark, state).items()
        if key.startswith(ADDED_PROPERTY_PREFIX)
    }
    existing = {field.name for field in spark.table(state).schema.fields}
    sensitive_state = names.sensitive_state
    if table.sensitive_columns and spark.catalog.tableExists(sensitive_state):
        existing |= {field.name for field in spark.table(sensitive_state).schema.fields}
    columns, inferred = [], []
    for column in table.columns:
        if column.added is None and column.name in recorded:
            column = dataclasses.replace(column, added=recorded[column.name])
        elif column.added is None and not {column.name, *column.renamed_from} & existing:
            column = dataclasses.replace(column, added=business_date)
            inferred.append(column)
        columns.append(column)
    applied = applied_versions(spark, state) if inferred else []
    latest = applied[-1].business_date if applied else None
    if latest is not None and business_date <= latest:
        lines = "\n".join(
            f"  - {{name: {c.name}, type: '{c.type}', added: '{business_date}'}}" for c in inferred
        )
        raise ConfigError(
            f"table '{table.name}': column(s) {', '.join(c.name for c in inferred)} of "
            f"{table.config_file} are not in its tables yet, and {business_date} is not after "
            f"the latest processed date {latest}, so the date the source began to send them "
            "cannot be inferred; nothing was written. Say it in their lines of "
            f"{table.config_file} (the first business date whose extract carries them; "
            f"{business_date} if it is this one), then run `hashcdc generate`:\n{lines}"
        )
    return dataclasses.replace(table, columns=tuple(columns)), [c.name for c in inferred]


def record_additions(
    spark: SparkSession, schema: str, table: TableConfig, inferred: list[str], business_date: str
) -> None:
    """Record the inferred first dates on the state table, and say so once, in one line."""
    if not inferred:
        return
    properties = ", ".join(
        f"'{ADDED_PROPERTY_PREFIX}{name}' = '{business_date}'" for name in inferred
    )
    state = table.relations.in_schema(schema).state
    spark.sql(f"alter table {state} set tblproperties ({properties})")
    added = ", ".join(f"'{name}'" for name in inferred)
    print(
        f"hashcdc: table '{table.name}': column(s) {added} first appear in the extract of "
        f"{business_date}: taken as added on that date (earlier rows are not updates because "
        f"of them). To say so in {table.config_file}, add `added: '{business_date}'` to "
        "their lines.",
        file=sys.stdout,
        flush=True,
    )


@dataclass(frozen=True)
class _Plan:
    """What one table needs: columns to add, and a select list when it must be rewritten."""

    table: str
    added: dict[str, str]
    rewrite: list[str] | None


def evolve_tables(spark: SparkSession, schema: str, table: TableConfig) -> None:
    """Bring a table's existing tables to the config's shape (see the module doc).

    Raises
    ------
    ConfigError
        When a column's type would narrow or change incompatibly, or a sensitive column
        is stored in a main table; nothing is changed then.

    """
    plans, problems, restored = [], [], []
    for persisted in persisted_tables(schema, table):
        if _finish_rewrite(spark, persisted.name):
            restored.append(persisted.name)
        if not spark.catalog.tableExists(persisted.name):
            continue
        existing = spark.table(persisted.name).schema
        plan = _plan(existing, persisted, table, problems)
        if plan.added or plan.rewrite:
            plans.append(plan)
    if restored:
        # dbt listed the schema's tables when the run started, without these: its models
        # would try to create them. The next run sees them.
        raise HashcdcError(
            f"table '{table.name}': a run was killed while {', '.join(restored)} was being "
            "rewritten for a schema change; the table is complete again and nothing else "
            "was written. Run the date again."
        )
    if problems:
        raise ConfigError(
            f"table '{table.name}': the config ({table.config_file}) cannot be applied to its "
            "tables; nothing was written:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    for plan in plans:
        # The rewrite copies the columns the table has; the new ones are added after it.
        # Every persisted table is Delta here: the stage upgrades the older ones first.
        if plan.rewrite:
            _replace_delta(spark, plan.table, plan.rewrite)
        if plan.added:
            columns = ", ".join(f"`{name}` {data_type}" for name, data_type in plan.added.items())
            spark.sql(f"alter table {plan.table} add columns ({columns})")


def _plan(
    existing: StructType, persisted: PersistedTable, table: TableConfig, problems: list[str]
) -> _Plan:
    """Compare a table's schema with the config: additions, and a rewrite when needed."""
    current = {f.name: f.dataType for f in existing.fields}
    where = persisted.name
    for column in table.sensitive_columns:
        if column.name in current and column not in persisted.columns:
            problems.append(
                f"{where} holds column '{column.name}', now marked sensitive: sensitive values "
                "are never kept in the main tables. Drop the table's relations and rebuild "
                "them with `hashcdc replay` from the first date (or keep the column "
                "non-sensitive)."
            )
    renamed = _renames(persisted.columns, current)
    wanted = {c.name: c.type for c in persisted.columns}
    images = {
        name: data_type
        for name, data_type in current.items()
        if persisted.has_images and name in IMAGE_COLUMNS and isinstance(data_type, StructType)
    }
    image_fields = {f.name: f for image in images.values() for f in image.fields}
    image_renames = _renames(persisted.columns, image_fields)
    select, needs_rewrite = [], bool(renamed)
    for name, data_type in current.items():
        new_name = renamed.get(name, name)
        target = wanted.get(new_name)
        if name in images:
            image = _image_expression(name, images[name], persisted.columns, where, problems)
            needs_rewrite |= image != f"`{name}`"
            select.append(image)
        elif name == CHANGED_COLUMNS and image_renames:
            # The names listed as changed follow the rename too.
            cases = " ".join(f"when '{old}' then '{new}'" for old, new in image_renames.items())
            select.append(
                f"transform(`{name}`, name -> case name {cases} else name end) as `{name}`"
            )
        elif target is not None and data_type.simpleString() != target:
            problem = type_change_problem(data_type.simpleString(), target)
            if problem:
                problems.append(_type_problem(where, new_name, problem))
            select.append(f"cast(`{name}` as {target}) as `{new_name}`")
            needs_rewrite = True
        else:
            select.append(f"`{name}` as `{new_name}`" if name != new_name else f"`{name}`")
    present = {renamed.get(name, name) for name in current}
    added = (
        {}
        if persisted.has_images
        else {name: data_type for name, data_type in wanted.items() if name not in present}
    )
    added |= {name: t for name, t in persisted.own_columns.items() if name not in current}
    return _Plan(persisted.name, added, select if needs_rewrite else None)


def _renames(columns: tuple[ColumnConfig, ...], current: dict[str, Any]) -> dict[str, str]:
    """Old name -> new name, for renamed columns the table still has under an old name."""
    renames = {}
    for column in columns:
        if column.name in current:
            continue
        for old in reversed(column.renamed_from):
            if old in current:
                renames[old] = column.name
                break
    return renames


def _type_problem(where: str, column: str, problem: str) -> str:
    return (
        f"{where}: column '{column}': {problem}. Add a new column instead (and mark this one "
        "removed), or drop the table's relations and rebuild them with `hashcdc replay` from "
        "the first date"
    )


def _image_expression(
    name: str,
    image: StructType,
    columns: tuple[ColumnConfig, ...],
    where: str,
    problems: list[str],
) -> str:
    """The select expression of a changelog image in the config's shape (or the column)."""
    fields = {f.name: f.dataType.simpleString() for f in image.fields}
    earlier_name = {new: old for old, new in _renames(columns, fields).items()}
    wanted = [(c.name, c.type) for c in columns]
    return _image_in_shape(name, image, wanted, earlier_name, where, problems)


def _image_in_shape(
    name: str,
    image: StructType,
    wanted: list[tuple[str, str]],
    earlier_name: dict[str, str],
    where: str,
    problems: list[str],
) -> str:
    """An image's select expression with the ``wanted`` fields (name, type), in order.

    ``earlier_name``: a field's name in the image when it was renamed since.
    """
    fields = {f.name: f.dataType.simpleString() for f in image.fields}
    if list(fields.items()) == wanted:
        return f"`{name}`"
    parts = []
    for column, data_type in wanted:
        source = column if column in fields else earlier_name.get(column)
        if source is None:
            value = f"cast(null as {data_type})"
        else:
            problem = type_change_problem(fields[source], data_type)
            if problem:
                problems.append(_type_problem(where, column, problem))
            value = f"cast(`{name}`.`{source}` as {data_type})"
        parts.append(f"'{column}', {value}")
    # A null image (an insert's before image) stays null.
    return f"if(`{name}` is null, null, named_struct({', '.join(parts)})) as `{name}`"


def evolve_group_images(spark: SparkSession, changelog: str, slots: list[tuple[str, str]]) -> None:
    """A table group's changelog follows its slots: a slot added is added to its images.

    ``slots``: the group's (name, type), in the state's order. The images are structs, so
    the table is rewritten in one commit that keeps its versions, as a table's own
    changelog is for a column added.
    """
    if not spark.catalog.tableExists(changelog):
        return
    problems: list[str] = []
    select, rewrite = [], False
    for field in spark.table(changelog).schema.fields:
        if field.name in IMAGE_COLUMNS and isinstance(field.dataType, StructType):
            image = _image_in_shape(field.name, field.dataType, slots, {}, changelog, problems)
            rewrite |= image != f"`{field.name}`"
            select.append(image)
        else:
            select.append(f"`{field.name}`")
    if problems:
        raise ConfigError("\n".join(problems))
    if rewrite:
        _replace_delta(spark, changelog, select)


def _replace_delta(spark: SparkSession, table: str, select: list[str]) -> None:
    """Rewrite a Delta table with a new select list in one commit (its versions are kept)."""
    kind = state_properties(HASH_ALGORITHM_VERSION) if is_state(table) else history_properties()
    replace_delta(spark, table, select, own_properties(spark, table) | kind)


def _finish_rewrite(spark: SparkSession, table: str) -> bool:
    """Complete or discard a rewrite a killed run left half-way.

    The copy is complete only once the original has been renamed aside: then the swap is
    finished; before that, the copy may be partial and is dropped. Returns whether the
    table had to be put back under its name.
    """
    copy, retired = table + REWRITE_SUFFIX, table + RETIRED_SUFFIX
    exists = spark.catalog.tableExists
    put_back = False
    if exists(retired):
        if not exists(table):
            put_back = True
            if exists(copy):
                spark.sql(f"alter table {copy} rename to {table}")
            else:
                spark.sql(f"alter table {retired} rename to {table}")
                return put_back
        spark.sql(f"drop table {retired}")
    if exists(copy):
        spark.sql(f"drop table {copy}")
    return put_back
