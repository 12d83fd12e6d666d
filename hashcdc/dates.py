"""Business dates: the one check of the ``YYYY-MM-DD`` form, and a moment's date in a zone.

The CLI checks its ``--date`` arguments with it, and the ``business_date`` macro checks the
dbt var ``business_date`` with it (through the adapter), so that a date is accepted or
refused by the same rule whichever way it is given. Where hashcdc assigns events their
dates itself (the capture's landing folders, a Kafka topic's dates), a date is the one its
source commit has in the table's time zone (``changes.time_zone``, UTC by default):
:func:`date_in_zone` and :func:`date_bounds_ms`.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from functools import cache
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


@cache
def time_zone(name: str) -> dt.tzinfo:
    """An IANA time zone by name.

    Raises
    ------
    HashcdcError
        When there is no zone of that name.

    """
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise HashcdcError(
            f"unknown time zone {name!r}: give an IANA name such as UTC or Europe/Berlin"
        ) from None


def date_in_zone(moment: dt.datetime, zone: str) -> str:
    """The business date (``YYYY-MM-DD``) of a moment in a time zone (naive: UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(time_zone(zone)).date().isoformat()


def date_bounds_ms(business_date: str, zone: str) -> tuple[int, int]:
    """A business date's first moment and the next date's, in epoch milliseconds.

    A date is 23 or 25 hours long where the zone changes its clocks on it.
    """
    day = dt.date.fromisoformat(business_date)
    zone_info = time_zone(zone)
    start, end = (
        dt.datetime.combine(d, dt.time(), tzinfo=zone_info) for d in (day, day + dt.timedelta(1))
    )
    return int(start.timestamp() * 1000), int(end.timestamp() * 1000)
