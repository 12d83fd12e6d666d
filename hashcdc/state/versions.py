"""A state table on Delta Lake: its properties, and the versions that applied each date.

Every commit that applies a date to a state carries ``{"hashcdc_business_date": "<date>"}``
in Delta's ``userMetadata`` (set for that statement by the state's materialization), so a
table's own log says which version holds which date. A ``RESTORE`` undoes the commits
after the version it restores, and a commit marked ``hashcdc_reset`` (a first date run
again) undoes them all: :func:`applied_versions` replays the log in order, so it gives
the dates the table holds now, each with the version that applied it.

One home for the rule, used by the dbt macros (through the adapter's
``hashcdc_applied_versions``) and by the CLI (reruns, replay, ``query --as-of``).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import urlparse
from urllib.request import url2pathname

from hashcdc.errors import HashcdcError
from hashcdc.relations import MEMBER_COLUMN, is_state

BUSINESS_DATE_KEY = "hashcdc_business_date"
# The oldest date whose version retention keeps (hashcdc.state.maintenance).
KEPT_SINCE_PROPERTY = "hashcdc.kept_since"
# Table properties that are hashcdc's (copied by a rewrite); Spark's and Delta's are not.
OWN_PROPERTY_PREFIX = "hashcdc."
# On the state table: the inferred first date of a column added without `added:`.
ADDED_PROPERTY_PREFIX = OWN_PROPERTY_PREFIX + "added."
RESET_KEY = "hashcdc_reset"
# On a commit of ``hashcdc stream``: a micro-batch applied on top of the date's earlier
# commits; the date stays open until a whole-date run closes it (docs/streaming.md).
MICRO_BATCH_KEY = "hashcdc_micro_batch"
# On a commit of a table group's state: the members whose date it applies (a commit
# without it applies every member's: a table's own state, or an earlier release's).
MEMBERS_KEY = "hashcdc_members"
# On the commit that undoes a date for some of a group's members (a member's rerun or
# replay): each member -> the version its rows were put back to (-1: none, emptied).
RESTORES_KEY = "hashcdc_restores"
# The session setting whose value Delta records as each commit's ``userMetadata``.
COMMIT_METADATA_SETTING = "spark.databricks.delta.commitInfo.userMetadata"


# On a table whose parquet files all hold timestamps as INT64 microseconds (none INT96).
TIMESTAMPS_PROPERTY = "hashcdc.parquet_timestamps"
MICROS = "micros"


# On a state: the operation its current view shows for a row the latest date did not
# write (N for a full extract, X for a delta or a feed), so that a reader without the
# config rebuilds `current` (docs/architecture.md, "Reading the lake without Spark").
UNTOUCHED_PROPERTY = "hashcdc.untouched_operation"


def untouched_operation(extract_type: str) -> str:
    """What `current` shows for a key the latest date did not write: N (full), else X."""
    return "N" if extract_type == "full" else "X"


# Deletion vectors: a MERGE marks the rows it replaces instead of rewriting their files.
# They pay on a large state (a 1%-changed day then writes ~2% of its bytes) and cost about
# a dozen Spark jobs and 1.5 s a date on a small one, so a state is made without them and
# the date that brings it to var('hashcdc_deletion_vectors_from_mib') switches them on
# (hashcdc.state.maintenance.deletion_vectors_by_size). A rewrite keeps the table's value.
DELETION_VECTORS_PROPERTY = "delta.enableDeletionVectors"
NEW_STATE_PROPERTIES = {DELETION_VECTORS_PROPERTY: "false"}
# A table group's state: where each member's columns sit on its slots, for readers
# without Spark (hashcdc.groups.slots.SlotMap.as_property).
SLOTS_PROPERTY = "hashcdc.slots"
# The version of hashcdc's hashes a state's rows hold (the assert_hash_version guard).
HASH_VERSION_PROPERTY = "hashcdc.hash_version"


def group_state_properties(hash_version: int, extract_type: str, slots: str) -> dict[str, str]:
    """The table properties of a new group state: a new state's, and its slot map (``slots``)."""
    properties = state_properties(hash_version, extract_type) | NEW_STATE_PROPERTIES
    return properties | {SLOTS_PROPERTY: slots}


def state_properties(hash_version: int, extract_type: str | None = None) -> dict[str, str]:
    """The table properties of a state: hash version, timestamps, change data feed.

    With ``extract_type``, also the operation `current` shows for an untouched key.
    Deletion vectors are the table's own (:data:`DELETION_VECTORS_PROPERTY`).
    """
    described = {UNTOUCHED_PROPERTY: untouched_operation(extract_type)} if extract_type else {}
    return described | {
        HASH_VERSION_PROPERTY: str(hash_version),
        TIMESTAMPS_PROPERTY: MICROS,
        # A date's history is read from the change data feed of the date's commit.
        "delta.enableChangeDataFeed": "true",
    }


def history_properties() -> dict[str, str]:
    """The table properties of a history (a Delta table, one partition per date)."""
    return {TIMESTAMPS_PROPERTY: MICROS}


@dataclass(frozen=True)
class DateVersion:
    """A version of a state table and the business date its commit applied.

    ``last_version`` is the latest version that still holds that date: commits without
    a date that followed it (a column added, a compaction, a restore to it) are part of
    it, so a date is read and restored with the table's schema as it is now.
    """

    version: int
    business_date: str
    last_version: int
    # Applied by the stream's micro-batches and not closed yet (no whole-date run since).
    is_open: bool = False
    # The first of the date's commits: the stream's micro-batches and the run that closed
    # the date are several (the history nets them); None: ``version`` alone.
    first_version: int | None = None


def commit_metadata(
    business_date: str,
    reset: bool = False,
    micro_batch: bool = False,
    members: Sequence[str] | None = None,
) -> str:
    """The ``userMetadata`` of a commit that applies ``business_date`` (or resets the table).

    ``micro_batch``: a commit of the stream, on top of the date's earlier commits.
    ``members``: a table group's, the members whose date the commit applies.
    """
    document: dict[str, Any] = {BUSINESS_DATE_KEY: business_date}
    if reset:
        document[RESET_KEY] = True
    if micro_batch:
        document[MICRO_BATCH_KEY] = True
    if members is not None:
        document[MEMBERS_KEY] = sorted(members)
    return _json(document)


def _json(document: dict[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def commit_metadata_statement(
    business_date: str | None,
    reset: bool = False,
    micro_batch: bool = False,
    members: Sequence[str] | None = None,
) -> str:
    """The SQL that makes the session's next commits apply ``business_date`` (None: no date)."""
    if business_date is None:
        return f"reset {COMMIT_METADATA_SETTING}"
    metadata = commit_metadata(business_date, reset, micro_batch, members)
    return f"set {COMMIT_METADATA_SETTING} = {metadata}"


def json_object(text: str | None) -> dict[str, Any]:
    """A JSON object from a commit's text field (``userMetadata``, an operation parameter).

    Empty when the text is missing, not JSON, or not an object.
    """
    if not text:
        return {}
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def effective_commits(
    history: list[dict[str, Any]], member: str | None = None
) -> list[dict[str, Any]]:
    """The commits whose effect a table holds now, in order (``describe history`` rows).

    A ``RESTORE`` undoes the commits after the version it restores; a reset commit (a
    first date run again, which empties the table) undoes every commit before it.
    ``member``: of a table group's state, the commits whose effect the member's rows hold:
    a commit that names its members applies only theirs, and a members' restore puts each
    member it names back to its own version (no ``RESTORE``: its siblings keep theirs).
    """
    effective: list[dict[str, Any]] = []
    for commit in sorted(history, key=lambda row: int(row["version"])):
        metadata = json_object(commit.get("userMetadata"))
        restores = metadata.get(RESTORES_KEY) if member is not None else None
        if commit.get("operation") == "RESTORE":
            restored = int((commit.get("operationParameters") or {}).get("version", -1))
            effective = [c for c in effective if int(c["version"]) <= restored]
        elif isinstance(restores, dict) and member in restores:
            effective = [c for c in effective if int(c["version"]) <= int(restores[member])]
        elif metadata.get(RESET_KEY) and _applies_to(metadata, member):
            effective = []
        if _applies_to(metadata, member):
            effective.append(commit)
    return effective


def _applies_to(metadata: dict[str, Any], member: str | None) -> bool:
    """Whether a commit (its ``userMetadata``) is one of ``member``'s (None: any)."""
    members = metadata.get(MEMBERS_KEY)
    return member is None or not isinstance(members, list) or member in members


def commit_date(commit: dict[str, Any]) -> str | None:
    """The business date a commit applied (None: a reset, or not a date's commit)."""
    metadata = json_object(commit.get("userMetadata"))
    if metadata.get(RESET_KEY) or BUSINESS_DATE_KEY not in metadata:
        return None
    return str(metadata[BUSINESS_DATE_KEY])


def applied_from_history(
    history: list[dict[str, Any]], member: str | None = None
) -> list[DateVersion]:
    """The dates a table holds, from its commits (``describe history`` rows, any order).

    The stream's micro-batches of a date are one entry: its version is the latest of
    them, and the date is open (no whole-date run closed it since). ``member``: the dates
    a table group's member holds (:func:`effective_commits`); None on a group's state:
    every member's dates, in date order.
    """
    # (first version, version, date, micro-batch): the first ends the date before.
    applied: list[tuple[int, int, str, bool]] = []
    for commit in effective_commits(history, member):
        date = commit_date(commit)
        if date is None:
            continue
        version = int(commit["version"])
        batch = bool(json_object(commit.get("userMetadata")).get(MICRO_BATCH_KEY))
        first = version
        if applied and applied[-1][2] == date and (batch or applied[-1][3]):
            first = applied.pop()[0]
        applied.append((first, version, date, batch))
    latest = max((int(row["version"]) for row in history), default=-1)
    ends = [first - 1 for first, _, _, _ in applied[1:]] + ([latest] if applied else [])
    dates = [
        DateVersion(
            version, date, end, is_open=batch, first_version=first if first < version else None
        )
        for (first, version, date, batch), end in zip(applied, ends, strict=True)
    ]
    if (
        dates
        and member is None
        and any(MEMBERS_KEY in json_object(c.get("userMetadata")) for c in history)
    ):
        # A table group's dates, all members': a member replayed alone or joined from a
        # state of its own applies earlier dates after later ones. In date order, the
        # latest holds the table as it is (each member at its own latest date).
        dates.sort(key=lambda d: (d.business_date, d.version))
        dates[-1] = replace(dates[-1], last_version=latest)
    return dates


def applied_versions(spark: Any, table: str) -> list[DateVersion]:
    """The dates ``table`` holds now, in order, each with the version that applied it.

    Dates before the table's ``hashcdc.kept_since`` (retention: ``hashcdc compact``) are
    left out: their versions' files are gone. A table's answer is kept in the process
    until its log gains a commit (:class:`_LogCache`): a date's run asks it about ten
    times, and each ``describe history`` is a Spark job.
    """
    kept = _APPLIED.current(table)
    if kept is not None:
        return kept
    history = table_history(spark, table)
    if history is None:
        return []  # a parquet state of an earlier release (pipeline.evolution.upgrade converts it)
    location = _HISTORY.location(table)
    mark = newest_commit(location) if location is not None else None
    applied = applied_from_history(history)
    kept_since = table_properties(spark, table).get(KEPT_SINCE_PROPERTY)
    answer = [a for a in applied if not kept_since or a.business_date >= kept_since]
    # Kept only when the history read is the one of this newest commit (its mark was taken
    # before its read): a commit in between is read again by the next call.
    if location is not None and mark is not None and _HISTORY.get(table, location, mark):
        _APPLIED.put(table, location, mark, answer)
    return answer


def member_applied_versions(
    spark: Any, table: str, members: Sequence[str]
) -> dict[str, list[DateVersion]]:
    """The dates each member of a table group holds in the group's state ``table``.

    Members' dates part ways when one is rerun, replayed or refused alone: each member's
    are read from the commits that applied its date (:func:`effective_commits`), with the
    group's retention (``hashcdc.kept_since``) as a table's.
    """
    history = table_history(spark, table)
    if history is None:
        return {member: [] for member in members}
    kept_since = table_properties(spark, table).get(KEPT_SINCE_PROPERTY)
    return {
        member: [
            a
            for a in applied_from_history(history, member)
            if not kept_since or a.business_date >= kept_since
        ]
        for member in members
    }


def restore_members(spark: Any, table: str, restores: dict[str, int | None]) -> None:
    """Put some members of a table group's state back to their own versions, in one commit.

    ``restores``: member -> the version its rows are read from (None: it has none, its
    rows are removed). Never a ``RESTORE``: the other members' rows stay as they are. The
    rows of a version are read with the columns of now (a slot added since is null), and
    the commit records each member's version (:data:`RESTORES_KEY`) for
    :func:`effective_commits`.
    """
    by_version: dict[int, list[str]] = {}
    for member, version in sorted(restores.items()):
        if version is not None:
            by_version.setdefault(version, []).append(member)
    source = _members_at(spark, table, by_version) or f"select * from {table} where false"
    metadata = _json({RESTORES_KEY: {m: -1 if v is None else v for m, v in restores.items()}})
    spark.sql(f"set {COMMIT_METADATA_SETTING} = {metadata}")
    try:
        of_members = _of_members(list(restores))
        spark.sql(f"insert into {table} replace where {of_members} {source}")
    finally:
        spark.sql(f"reset {COMMIT_METADATA_SETTING}")


def _members_at(spark: Any, table: str, by_version: dict[int, list[str]]) -> str:
    """A select of a group's members' rows, each at its version ('' when there are none).

    Read with the columns of now: a slot added since a version is null in its rows.
    """
    columns = spark.table(table).schema
    selects = []
    for version, members in sorted(by_version.items()):
        had = {f.name for f in spark.sql(f"select * from {table} version as of {version}").schema}
        listed = ", ".join(
            f"`{f.name}`"
            if f.name in had
            else f"cast(null as {f.dataType.simpleString()}) as `{f.name}`"
            for f in columns
        )
        selects.append(
            f"select {listed} from {table} version as of {version} where {_of_members(members)}"
        )
    return " union all ".join(selects)


def _of_members(members: Sequence[str]) -> str:
    """The condition that keeps a group's rows to ``members``."""
    return f"{MEMBER_COLUMN} in (" + ", ".join(f"'{m}'" for m in sorted(members)) + ")"


def table_history(spark: Any, table: str) -> list[dict[str, Any]] | None:
    """A Delta table's ``describe history`` rows (newest first); None when it is not Delta.

    Kept in the process until the table's log gains a commit, like the applied versions:
    the state's compaction policy reads it after the date's commit, and the tests and the
    audit that read the applied versions next then use the same read.
    """
    kept = _HISTORY.current(table)
    if kept is not None:
        return kept
    details = _delta_details(spark, table)
    if details is None:
        return None
    location = local_location(str(details.get("Location", "")))
    mark = newest_commit(location) if location is not None else None
    rows = [row.asDict() for row in spark.sql(f"describe history {table}").collect()]
    if location is not None and mark is not None:
        _HISTORY.put(table, location, mark, rows)
    return rows


def checksum_size(location: Path) -> int | None:
    """The bytes of a Delta table's files from the checksum of its newest commit, or None.

    Delta writes a checksum (``<version>.crc``, the protocol's version checksum file) with
    each commit; reading it costs no Spark job, where ``describe detail`` computes the
    snapshot's state (three jobs). None when the newest commit has no checksum (yet).
    """
    mark = newest_commit(location)
    if mark is None:
        return None
    crc = location / "_delta_log" / mark[0].replace(".json", ".crc")
    try:
        size = json.loads(crc.read_text(encoding="utf-8")).get("tableSizeBytes")
    except (OSError, ValueError):
        return None
    return int(size) if isinstance(size, int) else None


def table_size(spark: Any, table: str) -> int | None:
    """A Delta table's size in bytes (its checksum when local, else ``describe detail``).

    None when the table is not Delta.
    """
    details = _delta_details(spark, table)
    if details is None:
        return None
    location = local_location(str(details.get("Location", "")))
    size = checksum_size(location) if location is not None else None
    if size is None:
        detail = spark.sql(f"describe detail {table}").first()
        size = int(detail["sizeInBytes"] or 0) if detail is not None else 0
    return size


def local_location(location: str) -> Path | None:
    """A table location on this machine's file system (``file:`` or a plain path), or None."""
    if location.startswith("file:"):
        return Path(url2pathname(urlparse(location).path))
    if location.startswith("/"):
        return Path(location)
    return None


def newest_commit(location: Path) -> tuple[str, int, int] | None:
    """The newest commit file of a Delta table's log: name, modification time, size.

    A commit is a new file (Delta never rewrites one), so a table whose newest commit is
    the same file holds the same versions; None when the log cannot be read.
    """
    newest: os.DirEntry[str] | None = None
    try:
        with os.scandir(location / "_delta_log") as entries:
            for entry in entries:
                if _COMMIT_FILE.fullmatch(entry.name) and (
                    newest is None or entry.name > newest.name
                ):
                    newest = entry
        if newest is None:
            return None
        status = newest.stat()
    except OSError:
        return None
    return newest.name, status.st_mtime_ns, status.st_size


Answer = TypeVar("Answer")

# A commit file of a Delta log: its version, zero-padded to 20 digits.
_COMMIT_FILE = re.compile(r"\d{20}\.json")


class _LogCache(Generic[Answer]):
    """What this process has read of tables' logs (applied versions, history), by table name.

    An entry holds while the table's location and newest commit are the same: a commit by
    any process (a run, a restore, a compaction, a property set) is a new commit file,
    and a table dropped and made again starts a new log. Only tables on the local file
    system are kept (a listing there costs a millisecond); others are read every time.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[Path, tuple[str, int, int], list[Answer]]] = {}

    def location(self, table: str) -> Path | None:
        with self._lock:
            entry = self._entries.get(table)
        return entry[0] if entry else None

    def current(self, table: str) -> list[Answer] | None:
        """The answer kept for ``table`` when its log has gained no commit since, or None."""
        location = self.location(table)
        return None if location is None else self.get(table, location, newest_commit(location))

    def get(
        self, table: str, location: Path, mark: tuple[str, int, int] | None
    ) -> list[Answer] | None:
        with self._lock:
            entry = self._entries.get(table)
            if entry is None or mark is None or entry[:2] != (location, mark):
                self._entries.pop(table, None)
                return None
            return list(entry[2])

    def put(
        self, table: str, location: Path, mark: tuple[str, int, int], answer: list[Answer]
    ) -> None:
        with self._lock:
            self._entries[table] = (location, mark, list(answer))


_APPLIED: _LogCache[DateVersion] = _LogCache()
_HISTORY: _LogCache[dict[str, Any]] = _LogCache()
# Whether a table's shape at a version is its shape now (same_shape_at), by version.
_SHAPES: _LogCache[tuple[int, bool]] = _LogCache()


def version_as_of(applied: list[DateVersion], business_date: str) -> DateVersion | None:
    """The version that holds the state as of ``business_date`` (the latest date <= it)."""
    earlier = [a for a in applied if a.business_date <= business_date]
    return earlier[-1] if earlier else None


def version_before(applied: list[DateVersion], business_date: str) -> DateVersion | None:
    """The version that holds the state of the latest date before ``business_date``."""
    earlier = [a for a in applied if a.business_date < business_date]
    return earlier[-1] if earlier else None


def _details(spark: Any, relation: str) -> dict[str, Any]:
    """A table's or view's ``describe table extended`` rows, by name."""
    return {row[0]: row[1] for row in spark.sql(f"describe table extended {relation}").collect()}


def _delta_details(spark: Any, table: str) -> dict[str, Any] | None:
    """A Delta table's ``describe table extended`` rows, by name; None for any other table."""
    details = _details(spark, table)
    return details if str(details.get("Provider", "")).lower() == "delta" else None


def is_delta(spark: Any, table: str) -> bool:
    """Whether a table is a Delta table (the states) rather than parquet."""
    return _delta_details(spark, table) is not None


def relation_names(spark: Any, schema: str) -> set[str]:
    """The names of a schema's tables and views, in one listing (lower case, as Spark's).

    ``SHOW TABLES`` names them; a look-up a relation (``tableExists``) is a call to the
    metastore each, and the catalog's ``listTables`` describes each (seconds for 500). The
    session's temporary views, which it lists too, are left out.
    """
    listed = spark.sql(f"show tables in {schema}").collect()
    return {row.tableName for row in listed if not row.isTemporary}


def as_of_views(spark: Any, schema: str, business_date: str, prefix: str = "") -> list[str]:
    """Temporary views that show the schema's tables as they were after ``business_date``.

    Each state (a Delta table) is read at the version that applied the latest date on or
    before it; each table with a ``business_date`` column (histories, rejects, changelogs)
    keeps the rows of dates up to it; each view (current, scd2) is defined again over
    those. Unqualified names then resolve to them in the session (``hashcdc query
    --as-of``); the tables themselves are untouched. ``prefix``: only the relations whose
    name starts with it. Returns the names shadowed.
    """
    shadowed: dict[str, str] = {}
    views: list[str] = []
    for table in spark.catalog.listTables(schema):
        if table.isTemporary or not table.name.startswith(prefix):
            continue
        qualified = f"{schema}.{table.name}"
        if table.tableType == "VIEW":
            views.append(table.name)
        elif is_state(table.name) and is_delta(spark, qualified):
            shadowed[table.name] = _state_as_of(spark, qualified, business_date)
        elif "business_date" in {c.name for c in spark.catalog.listColumns(qualified)}:
            shadowed[table.name] = (
                f"select * from {qualified} where business_date <= date'{business_date}'"
            )
    for name, select in shadowed.items():
        spark.sql(f"create or replace temporary view `{name}` as {select}")
    texts = {}
    for name in views:
        text = _view_text(spark, f"{schema}.{name}")
        for base in [*shadowed, *views]:
            for written in (f"`{schema}`.`{base}`", f"{schema}.{base}"):
                text = text.replace(written, f"`{base}`")
        texts[name] = text
    _create_in_order(spark, texts)
    return sorted([*shadowed, *views])


def _state_as_of(spark: Any, state: str, business_date: str) -> str:
    """The select of a state as it was after ``business_date``.

    A table group's: each member's rows at its own version for the date (one select when
    they share it; a member rerun or replayed alone has versions its siblings do not).
    """
    members = group_members(table_properties(spark, state))
    if not members:
        applied = version_as_of(applied_versions(spark, state), business_date)
        if applied is None:
            return f"select * from {state} where false"
        return f"select * from {state} version as of {applied.last_version}"
    by_version: dict[int, list[str]] = {}
    for member, applied in member_applied_versions(spark, state, members).items():
        found = version_as_of(applied, business_date)
        if found is not None:
            by_version.setdefault(found.last_version, []).append(member)
    if len(by_version) == 1:
        [(version, _)] = by_version.items()
        return f"select * from {state} version as of {version}"
    return _members_at(spark, state, by_version) or f"select * from {state} where false"


def group_members(properties: dict[str, str]) -> list[str]:
    """A table group's members, from its state's slot map (``hashcdc.slots``); [] for a table."""
    value = properties.get(SLOTS_PROPERTY, "")
    return sorted({entry.split(":", 1)[0] for entry in value.split(";") if ":" in entry})


def _create_in_order(spark: Any, texts: dict[str, str]) -> None:
    """Create temporary views of which some read others, each after those it reads.

    A table group's member views read the group's. A temporary view binds each name it
    reads when it is created: made before the view it reads, it would read the schema's
    own (the session's current schema), as of now. ``texts`` name the views they read as
    :func:`as_of_views` writes them (`` `name` ``).
    """
    left = dict(texts)
    while left:
        ready = [
            name
            for name, text in left.items()
            if not any(f"`{other}`" in text for other in left if other != name)
        ]
        if not ready:
            raise HashcdcError(f"views that read each other: {', '.join(sorted(left))}")
        for name in ready:
            spark.sql(f"create or replace temporary view `{name}` as {left.pop(name)}")


# A relation in a parsed plan's tree: ``'UnresolvedRelation [schema, name], [], false``.
_RELATION = re.compile(r"'UnresolvedRelation \[(.*?)\], \[")
# What a query's text holds besides names: string literals and comments, never rewritten.
_LITERAL = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|--[^\n]*|/\*.*?\*/"
SESSION_CATALOG = "spark_catalog"


def query_relations(spark: Any, sql: str) -> list[list[str]]:
    """The relations a query names (each as its name parts), subqueries and CTEs included.

    Read from Spark's own parser (the plan before analysis), so what counts as a name is
    what Spark would resolve.
    """
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
    return [
        [part.strip() for part in found.split(",")]
        for found in _RELATION.findall(plan.treeString())
    ]


def as_of_query(spark: Any, schema: str, sql: str, business_date: str) -> tuple[str, list[str]]:
    """``sql`` made to read every relation as it was after ``business_date``.

    Returns the query and the temporary views that shadow the schema's relations (the
    caller drops them once the query is read).

    The schema's tables are shadowed by :func:`as_of_views` (under their own names); a
    name written with the schema (``schema.t``, ```schema`.`t```, ``spark_catalog.schema.t``)
    is rewritten to the shadowing view, so both spellings read the same version. A name
    ``--as-of`` cannot serve (another schema, a path) is refused, never read at its latest.
    """
    own = schema.lower()
    for parts in query_relations(spark, sql):
        lowered = [part.lower() for part in parts]
        if lowered[:1] == [SESSION_CATALOG]:
            lowered = lowered[1:]
        # The schema's own names are served (one it lacks, Spark names in its error).
        if len(lowered) == 1 or (len(lowered) == 2 and lowered[0] == own):
            continue
        raise HashcdcError(
            f"query --as-of {business_date}: `{'.'.join(parts)}` is not a table of schema "
            f"{schema}, the only one --as-of reads as of a date; name a table of {schema} "
            "(with or without the schema), or query it without --as-of"
        )
    views = as_of_views(spark, schema, business_date)
    shadowed = {name.lower() for name in views}
    names = "|".join(re.escape(name) for name in sorted(shadowed, key=len, reverse=True))
    if not names:
        return sql, views
    qualified = re.compile(
        rf"({_LITERAL})|(?<![\w.`])(?:`?{SESSION_CATALOG}`?\s*\.\s*)?`?{re.escape(schema)}`?"
        rf"\s*\.\s*`?({names})`?(?![\w`])",
        re.IGNORECASE | re.DOTALL,
    )
    return qualified.sub(lambda m: m.group(1) or f"`{m.group(2)}`", sql), views


def _view_text(spark: Any, view: str) -> str:
    return str(_details(spark, view)["View Text"])


def same_shape_at(spark: Any, table: str, version: int) -> bool:
    """Whether ``table``'s columns and their types now are those it had at ``version``.

    A run that closes a streamed date asks twice (its model and its pre-hook), and the
    old version's schema is a snapshot of its own to load: the answer is kept in the
    process until the table's log gains a commit, like the applied versions.
    """
    kept = dict(_SHAPES.current(table) or [])
    if version in kept:
        return kept[version]
    location = _HISTORY.location(table)
    mark = newest_commit(location) if location is not None else None

    def shape(schema: Any) -> list[tuple[str, str]]:
        return [(field.name, field.dataType.simpleString()) for field in schema]

    then = spark.sql(f"select * from {table} version as of {int(version)}").schema
    same = shape(spark.table(table).schema) == shape(then)
    if location is not None and mark is not None:
        _SHAPES.put(table, location, mark, [*kept.items(), (version, same)])
    return same


def restore(spark: Any, table: str, version: int) -> None:
    """Restore a state's rows to ``version``, keeping its shape and records of now.

    A rerun or a replay restores the state the date was computed from. Delta's RESTORE
    also puts back that version's schema and table properties, but the date's rows are
    computed with the config of now: a column added since stays (null, as for every date
    before it), a column widened since stays wide, and what hashcdc recorded since (a
    column's inferred first date, the retention's oldest kept date) stays recorded.
    """
    shape_now = {f.name: f.dataType.simpleString() for f in spark.table(table).schema}
    kept = {
        key: value
        for key, value in table_properties(spark, table).items()
        if key.startswith(ADDED_PROPERTY_PREFIX) or key == KEPT_SINCE_PROPERTY
    }
    spark.sql(f"restore table {table} to version as of {version}")
    restored = {f.name: f.dataType.simpleString() for f in spark.table(table).schema}
    properties = table_properties(spark, table)
    lost = {name: kind for name, kind in shape_now.items() if name not in restored}
    narrowed = {
        name for name, kind in restored.items() if name in shape_now and shape_now[name] != kind
    }
    forgotten = {key: value for key, value in kept.items() if properties.get(key) != value}
    if narrowed:
        # Delta cannot widen a column in place: the restored rows are rewritten in one
        # commit with the types of now (and the columns added since).
        select = [
            f"cast(`{name}` as {shape_now[name]}) as `{name}`" if name in narrowed else f"`{name}`"
            for name in restored
        ] + [f"cast(null as {kind}) as `{name}`" for name, kind in lost.items()]
        carried = {
            key: value
            for key, value in properties.items()
            if key.startswith((OWN_PROPERTY_PREFIX, "delta.enable"))
        }
        replace_delta(spark, table, select, carried | kept)
        return
    if lost:
        columns = ", ".join(f"`{name}` {kind}" for name, kind in lost.items())
        spark.sql(f"alter table {table} add columns ({columns})")
    if forgotten:
        listed = ", ".join(f"'{key}' = '{value}'" for key, value in forgotten.items())
        spark.sql(f"alter table {table} set tblproperties ({listed})")


def table_properties(spark: Any, table: str) -> dict[str, str]:
    """A table's properties (``show tblproperties``)."""
    return {row[0]: row[1] for row in spark.sql(f"show tblproperties {table}").collect()}


def own_properties(spark: Any, table: str) -> dict[str, str]:
    """The properties a rewrite of a table carries over: hashcdc's and deletion vectors'."""
    return {
        key: value
        for key, value in table_properties(spark, table).items()
        if key.startswith(OWN_PROPERTY_PREFIX) or key == DELETION_VECTORS_PROPERTY
    }


def replace_delta(spark: Any, table: str, select: list[str], properties: dict[str, str]) -> None:
    """Rewrite a Delta table with a select list in one commit (its versions are kept).

    ``properties``: the table's properties after it (a replace keeps none by itself). The
    partition columns stay (a history's ``business_date``).
    """
    listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    partitions = list(spark.sql(f"describe detail {table}").collect()[0]["partitionColumns"])
    partitioned = f"partitioned by ({', '.join(partitions)}) " if partitions else ""
    spark.sql(
        f"create or replace table {table} using delta {partitioned}tblproperties ({listed}) "
        f"as select {', '.join(select)} from {table}"
    )
