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
from dataclasses import dataclass
from typing import Any

BUSINESS_DATE_KEY = "hashcdc_business_date"
RESET_KEY = "hashcdc_reset"


def state_properties(hash_version: int) -> dict[str, str]:
    """The table properties of a state: hash version, deletion vectors, change data feed."""
    return {
        "hashcdc.hash_version": str(hash_version),
        # A MERGE marks the rows it removes instead of rewriting their files.
        "delta.enableDeletionVectors": "true",
        # A date's history is read from the change data feed of the date's commit.
        "delta.enableChangeDataFeed": "true",
    }


@dataclass(frozen=True)
class DateVersion:
    """A version of a state table and the business date its commit applied."""

    version: int
    business_date: str


def commit_metadata(business_date: str, reset: bool = False) -> str:
    """The ``userMetadata`` of a commit that applies ``business_date`` (or resets the table)."""
    document: dict[str, Any] = {BUSINESS_DATE_KEY: business_date}
    if reset:
        document[RESET_KEY] = True
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def _metadata(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def applied_from_history(history: list[dict[str, Any]]) -> list[DateVersion]:
    """The dates a table holds, from its commits (``describe history`` rows, any order)."""
    applied: list[DateVersion] = []
    for commit in sorted(history, key=lambda row: int(row["version"])):
        metadata = _metadata(commit.get("userMetadata"))
        if commit.get("operation") == "RESTORE":
            restored = int((commit.get("operationParameters") or {}).get("version", -1))
            applied = [a for a in applied if a.version <= restored]
        elif metadata.get(RESET_KEY):
            applied = []
        elif BUSINESS_DATE_KEY in metadata:
            applied.append(DateVersion(int(commit["version"]), str(metadata[BUSINESS_DATE_KEY])))
    return applied


def applied_versions(spark: Any, table: str) -> list[DateVersion]:
    """The dates ``table`` holds now, in order, each with the version that applied it."""
    rows = spark.sql(f"describe history {table}").collect()
    return applied_from_history([row.asDict() for row in rows])


def version_as_of(applied: list[DateVersion], business_date: str) -> DateVersion | None:
    """The version that holds the state as of ``business_date`` (the latest date <= it)."""
    earlier = [a for a in applied if a.business_date <= business_date]
    return earlier[-1] if earlier else None


def version_before(applied: list[DateVersion], business_date: str) -> DateVersion | None:
    """The version that holds the state of the latest date before ``business_date``."""
    earlier = [a for a in applied if a.business_date < business_date]
    return earlier[-1] if earlier else None
