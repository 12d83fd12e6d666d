"""Business dates: the one check of the ``YYYY-MM-DD`` form.

The CLI checks its ``--date`` arguments with it, and the ``business_date`` macro checks the
dbt var ``business_date`` with it (through the adapter), so that a date is accepted or
refused by the same rule whichever way it is given.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from hashcdc.errors import HashcdcError

_FORM = re.compile(r"^\d{4}-\d{2}-\d{2}$")
NOT_SET = (
    "business_date is not set: run `hashcdc run --date YYYY-MM-DD` or "
    "`dbt build --vars '{business_date: YYYY-MM-DD}'`"
)


def parse_business_date(value: Any) -> str:
    """Validate a business date given as ``YYYY-MM-DD``; returns it unchanged.

    Raises
    ------
    HashcdcError
        When it is missing, not of that form (``20240305``), or not a calendar date.

    """
    if value in (None, "", "None"):
        raise HashcdcError(NOT_SET)
    text = str(value)
    try:
        if not _FORM.match(text):
            raise ValueError(text)
        dt.date.fromisoformat(text)
    except ValueError:
        raise HashcdcError(f"business_date {text!r} is not a date in YYYY-MM-DD form") from None
    return text


def partition_dates(spark: Any, table: str) -> list[str]:
    """The business dates of a table's partitions (from the metastore), ascending."""
    rows = spark.sql(f"show partitions {table}").collect()
    return sorted(row[0].split("=", 1)[1] for row in rows)
