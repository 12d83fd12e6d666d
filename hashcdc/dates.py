"""Business dates: the one check of the ``YYYY-MM-DD`` form, for the CLI and the stage.

(dbt's own entry point checks the same form in the ``business_date`` macro.)
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from hashcdc.errors import HashcdcError

# How `hashcdc run` gives dbt the business date: an environment variable read at run time
# (the `business_date` macro), not a dbt var, so that dbt's partial parsing keeps working
# from one date to the next (a changed `--vars` makes dbt parse the whole project again).
BUSINESS_DATE_ENV = "HASHCDC_BUSINESS_DATE"
# The Spark session setting in which the Python models find the date: set before each of
# them runs by the pre-hook `set_business_date_conf` (the macro names it too).
BUSINESS_DATE_CONF = "hashcdc.business_date"

_FORM = re.compile(r"^\d{4}-\d{2}-\d{2}$")
NOT_SET = (
    "business_date is not set: run `hashcdc run --date YYYY-MM-DD`, "
    "`dbt build --vars '{business_date: YYYY-MM-DD}'` or "
    f"`{BUSINESS_DATE_ENV}=YYYY-MM-DD dbt build`"
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


def session_business_date(spark: Any) -> str:
    """The business date a Python model runs for (the session setting of its pre-hook)."""
    return parse_business_date(spark.conf.get(BUSINESS_DATE_CONF, None))


def partition_dates(spark: Any, table: str) -> list[str]:
    """The business dates of a table's partitions (from the metastore), ascending."""
    rows = spark.sql(f"show partitions {table}").collect()
    return sorted(row[0].split("=", 1)[1] for row in rows)
