"""A first table config from a sample extract (``hashcdc init NAME --sample FILE``).

The columns and their types come from the sample (CSV: the header and up to
:data:`hashcdc.pipeline.header.SAMPLE_ROWS` rows, typed like a new column of a later extract;
parquet: the file's own schema). Which columns identify a row cannot be seen in a sample:
the user marks them.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from pathlib import Path

from hashcdc.column_types import normalize_type
from hashcdc.config import NAME_PATTERN
from hashcdc.errors import HashcdcError
from hashcdc.pipeline.header import SAMPLE_ROWS, inferred_type
from hashcdc.runtime.project import files_session


def column_name(field: str) -> str:
    """A config column name (a lower-case identifier) for an extract's field name."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", field.strip())
    name = re.sub(r"[^a-z0-9]+", "_", snake.lower()).strip("_") or "column"
    return name if NAME_PATTERN.match(name) else f"c_{name}"


def _csv_columns(sample: Path, delimiter: str) -> list[tuple[str, str]]:
    opener = gzip.open if sample.suffix == ".gz" else open
    with opener(sample, "rb") as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        reader = csv.reader(text, delimiter=delimiter)
        header = next(reader, None)
        if not header:
            raise HashcdcError(f"{sample} is empty: a sample needs a header line and rows")
        rows = [row for _, row in zip(range(SAMPLE_ROWS), reader, strict=False)]
    return [
        (field, inferred_type([row[i] for row in rows if i < len(row)]))
        for i, field in enumerate(header)
    ]


def _parquet_columns(project_dir: Path, sample: Path) -> list[tuple[str, str]]:
    schema = files_session(project_dir).read.parquet(str(sample.resolve())).schema
    return [(f.name, normalize_type(f.dataType.simpleString()) or "string") for f in schema]


def _is_parquet(sample: Path) -> bool:
    if sample.is_dir():
        return any(sample.glob("*.parquet"))
    return sample.suffix == ".parquet"


def table_yaml_from_sample(project_dir: Path, name: str, sample: Path, delimiter: str) -> str:
    """The text of ``tables/<name>.yml`` for an extract like ``sample``."""
    if not NAME_PATTERN.match(name):
        raise HashcdcError(f"table name {name!r} must be a lower-case identifier (a-z, 0-9, _)")
    if not sample.exists():
        raise HashcdcError(f"no sample extract at {sample}")
    is_parquet = _is_parquet(sample)
    fields = (
        _parquet_columns(project_dir, sample) if is_parquet else _csv_columns(sample, delimiter)
    )
    lines = [
        f"# Written by `hashcdc init` from {sample.name}: mark the column(s) that identify a",
        "# row with `key: true`, check the types, then run `hashcdc generate`.",
        "# yaml-language-server: $schema=../hashcdc/tables.schema.json",
        f"name: {name}",
        "description: ''",
        "extract_type: full",
        "source:",
        f"  path: landing/{name}/{{business_date}}/{sample.name}",
        f"  format: {'parquet' if is_parquet else 'csv'}",
    ]
    if not is_parquet and delimiter != ",":
        lines += ["  csv:", f"    delimiter: {delimiter!r}"]
    lines.append("columns:")
    for field, column_type in fields:
        column = column_name(field)
        source = "" if column == field.strip().lower() else f", source_name: {field!r}"
        lines.append(f"  - {{name: {column}, type: '{column_type}'{source}}}")
    return "\n".join(lines) + "\n"
