"""Read hashcdc's lake as a notebook user would: DuckDB, polars and delta-rs, no Spark.

Run as its own process (``python lake_readers.py REQUEST.json``) with DuckDB's reader
version first on the path (``.venv/readers``, tests/readers.txt); prints one JSON object:
for each reader, ``current`` and ``history`` now, and for each requested date the state's
``current`` and the history as they were after it. The only hashcdc code used is the
documented date -> version rule (:func:`hashcdc.state.versions.applied_from_history`, fed with
delta-rs's reading of the log); the rest follows docs/architecture.md, "Reading the lake
without Spark": `current` is rebuilt from the state with its own property
``hashcdc.untouched_operation``, a history as of D is its rows of dates up to D.

A table of a group (``member`` in the request) is read from its group's state and history
by the documented filter: its rows (``table_name``), its columns from the slots the
state's ``hashcdc.slots`` property names, its own W row, and its own dates' versions (the
commits that name it).

Values are printed as ``str()`` of Python's (UTC, naive timestamps; null as ''), the form
``hashcdc query`` prints, so the test compares text with text.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import duckdb_extension_delta
import polars as pl
from deltalake import DeltaTable, QueryBuilder

from hashcdc.state.versions import UNTOUCHED_PROPERTY, applied_from_history, version_as_of

LIVE = ("I", "U", "N", "X")
SLOTS_PROPERTY = "hashcdc.slots"


@dataclass(frozen=True)
class Member:
    """A table of a group: its name and its columns' slots (``member:column=slot;…``)."""

    name: str
    slots: dict[str, str]

    @classmethod
    def of(cls, configuration: dict[str, str], name: str) -> Member:
        placed = [entry.split(":", 1) for entry in configuration[SLOTS_PROPERTY].split(";")]
        return cls(name, dict(p.split("=", 1) for member, p in placed if member == name))

    def sql(self, relation: str) -> str:
        """The member's rows of a group's table, its columns named (SQL readers)."""
        named = ", ".join(f'"{slot}" as "{column}"' for column, slot in self.slots.items())
        return f"select *, {named} from {relation} where table_name = '{self.name}'"

    def frame(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The same for polars."""
        named = {column: pl.col(slot) for column, slot in self.slots.items()}
        return frame.filter(pl.col("table_name") == self.name).with_columns(**named)


def text(value: Any) -> str:
    """A value as ``hashcdc query`` prints it (timestamps in UTC, without a zone)."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return str(value)


def rows(records: list[dict[str, Any]], columns: list[str]) -> list[list[str]]:
    return sorted([text(record[c]) for c in columns] for record in records)


def current_sql(table: str, untouched: str, columns: list[str]) -> str:
    """`current` from a state registered as ``table``, by the documented rule (SQL)."""
    listed = ", ".join(f'"{c}"' for c in columns if c != "operation")
    return (
        f"select {listed}, case when business_date = (select max(business_date) from {table} "
        f"where operation = 'W') then operation else '{untouched}' end as operation "
        f"from {table} where operation in {LIVE}"
    )


class Reader:
    """A reader of one table: of its own files, or a member's rows of its group's."""

    def __init__(self, member: Member | None = None) -> None:
        self.member = member


class Duck(Reader):
    """DuckDB with the delta extension loaded from its wheel (no download)."""

    name = "duckdb"

    def __init__(self, member: Member | None = None) -> None:
        super().__init__(member)
        folder = Path(duckdb_extension_delta.__file__).parent / "extensions"
        self.connection = duckdb.connect(
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
        )
        self.connection.load_extension(
            str(folder / f"v{duckdb.__version__}" / "delta.duckdb_extension")
        )
        self.connection.execute("set TimeZone = 'UTC'")

    def _records(self, sql: str) -> list[dict[str, Any]]:
        result = self.connection.sql(sql)
        return [dict(zip(result.columns, row, strict=True)) for row in result.fetchall()]

    def _scan(self, path: str, at: str = "") -> str:
        scan = f"delta_scan('{path}'{at})"
        return self.member.sql(scan) if self.member else f"select * from {scan}"

    def current(
        self, path: str, version: int | None, untouched: str, columns: list[str]
    ) -> list[dict[str, Any]]:
        at = f", version => {version}" if version is not None else ""
        self.connection.execute(f"create or replace view s as {self._scan(path, at)}")
        return self._records(current_sql("s", untouched, columns))

    def history(self, path: str, until: str | None) -> list[dict[str, Any]]:
        where = f" where business_date <= date'{until}'" if until else ""
        return self._records(f"select * from ({self._scan(path)}){where}")


class Polars(Reader):
    """polars' ``read_delta`` (on delta-rs)."""

    name = "polars"

    def current(
        self, path: str, version: int | None, untouched: str, columns: list[str]
    ) -> list[dict[str, Any]]:
        state = pl.read_delta(path, version=version)
        if self.member:
            state = self.member.frame(state)
        latest = state.filter(pl.col("operation") == "W")["business_date"].max()
        shown = pl.when(pl.col("business_date") == latest).then(pl.col("operation"))
        return (
            state.filter(pl.col("operation").is_in(LIVE))
            .with_columns(operation=shown.otherwise(pl.lit(untouched)))
            .select(columns)
            .to_dicts()
        )

    def history(self, path: str, until: str | None) -> list[dict[str, Any]]:
        frame = pl.read_delta(path)
        if self.member:
            frame = self.member.frame(frame)
        if until:
            frame = frame.filter(pl.col("business_date") <= dt.date.fromisoformat(until))
        return frame.to_dicts()


class DeltaRs(Reader):
    """delta-rs's own SQL engine (its ``to_pyarrow_table`` refuses deletion vectors)."""

    name = "delta-rs"

    def _records(self, table: DeltaTable, sql: str) -> list[dict[str, Any]]:
        result = QueryBuilder().register("s", table).execute(sql).read_all()
        values = [result.column(name).to_pylist() for name in result.column_names]
        return [
            dict(zip(result.column_names, row, strict=True)) for row in zip(*values, strict=True)
        ]

    def current(
        self, path: str, version: int | None, untouched: str, columns: list[str]
    ) -> list[dict[str, Any]]:
        table = DeltaTable(path, version=version)
        return self._records(table, self._within(current_sql("m", untouched, columns)))

    def history(self, path: str, until: str | None) -> list[dict[str, Any]]:
        where = f" where business_date <= date '{until}'" if until else ""
        return self._records(DeltaTable(path), self._within(f"select * from m{where}"))

    def _within(self, sql: str) -> str:
        """``sql`` over ``m``: the registered table, or a member's rows of it."""
        source = self.member.sql("s") if self.member else "select * from s"
        return f"with m as ({source}) {sql}"


def read(request: dict[str, Any]) -> dict[str, Any]:
    """Every reader's current, history and as-of reads of one table."""
    state, history = request["state"], request["history"]
    columns, history_columns = request["columns"], request["history_columns"]
    log = DeltaTable(state)
    configuration = log.metadata().configuration
    untouched = configuration[UNTOUCHED_PROPERTY]
    member = Member.of(configuration, request["member"]) if request.get("member") else None
    applied = applied_from_history(log.history(), member.name if member else None)
    found: dict[str, Any] = {"versions": {a.business_date: a.last_version for a in applied}}
    for reader in (Duck(member), Polars(member), DeltaRs(member)):
        reads = {
            "current": rows(reader.current(state, None, untouched, columns), columns),
            "history": rows(reader.history(history, None), history_columns),
        }
        for business_date in request["dates"]:
            version = version_as_of(applied, business_date)
            assert version is not None, business_date
            current = reader.current(state, version.last_version, untouched, columns)
            reads[f"current@{business_date}"] = rows(current, columns)
            reads[f"history@{business_date}"] = rows(
                reader.history(history, business_date), history_columns
            )
        found[reader.name] = reads
    return found


if __name__ == "__main__":
    print(json.dumps(read(json.loads(Path(sys.argv[1]).read_text()))))
