"""Where the TOAST placeholder's fast text scan applies (no Spark)."""

from __future__ import annotations


def test_the_placeholder_text_scan_is_used_only_where_json_shows_it_verbatim() -> None:
    from hashcdc.config import DEBEZIUM_UNAVAILABLE_VALUE
    from hashcdc.pipeline.casting import unavailable_forms
    from hashcdc.pipeline.feed import shows_verbatim_in_json

    # The default placeholder and its base64 and hex forms: a line that holds one shows it.
    assert shows_verbatim_in_json(unavailable_forms(DEBEZIUM_UNAVAILABLE_VALUE)[:-1])
    # A writer may escape "/" (as \/), a quote or a non-ASCII letter: the exact test runs.
    assert not shows_verbatim_in_json(["n/a"])
    assert not shows_verbatim_in_json(['"gone"'])
    assert not shows_verbatim_in_json(["ünavailable"])
