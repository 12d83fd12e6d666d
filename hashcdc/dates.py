"""Business dates: the one check of the ``YYYY-MM-DD`` form, for the CLI and the stage.

(dbt's own entry point checks the same form in the ``business_date`` macro.)
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
