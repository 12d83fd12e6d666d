"""The real pipeline (dbt + Spark) over several business dates, checked row by row.

Expected current and history rows come from the pure-Python oracle in ``oracle.py``,
never from the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from oracle import Version, apply_extract

from hashcdc.pipeline.session_stage import (
    StageCounts,
    kept_counts,
    release_stage,
    view_name,
)
from hashcdc.runtime.project import table_selector
from hashcdc.state.versions import commit_metadata_statement

COLUMNS = ["region", "id", "name", "amount", "score", "active", "born", "updated_at"]
KEYS = ["region", "id"]
COMPARED = ["name", "amount", "score", "active", "born"]
DATES = ["2024-03-01", "2024-03-02", "2024-03-04", "2024-03-05"]


def table_config(name: str, extract_type: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Customers, for the pipeline tests.",
        "extract_type": extract_type,
        "changelog": True,
        "source": {"path": f"landing/{name}/{{business_date}}/{name}.csv", "format": "csv"},
        "columns": [
            {"name": "region", "type": "string", "key": True},
            {"name": "id", "type": "int", "key": True},
            {"name": "name", "type": "string"},
            {"name": "amount", "type": "decimal(10,2)"},
            {"name": "score", "type": "double"},
            {"name": "active", "type": "boolean"},
            {"name": "born", "type": "date"},
            {
                "name": "updated_at",
                "type": "timestamp",
                "format": "yyyy-MM-dd HH:mm:ss",
                "ignore": True,
            },
        ],
    }


def row(
    region: str,
    key: int,
    name: str | None,
    amount: str | None,
    score: float | None,
    active: bool | None,
    born: str | None,
    updated_at: str,
) -> dict[str, Any]:
    """One extract row as text cells plus its typed form (what Spark should read)."""
    return {
        "cells": [
            region,
            key,
            name,
            amount,
            score,
            None if active is None else str(active).lower(),
            born,
            updated_at,
        ],
        "typed": {
            "region": region,
            "id": key,
            "name": name,
            "amount": None if amount is None else Decimal(amount),
            "score": score,
            "active": active,
            "born": None if born is None else dt.date.fromisoformat(born),
            "updated_at": dt.datetime.fromisoformat(updated_at),
        },
    }


def day_extracts(extract_type: str) -> dict[str, list[dict[str, Any]]]:
    """Four dates exercising I, U, N, D/X, re-inserts, nulls, "", quotes, unicode."""
    ts1, ts2, ts3, ts4 = (f"2024-03-0{d} 06:00:00" for d in (1, 2, 4, 5))
    day1 = [
        row("eu", 1, "Alice", "10.50", 1.5, True, "1990-01-01", ts1),
        row("eu", 2, "Bob, Jr.", "3.00", None, False, None, ts1),
        row("us", 1, 'Carol "CJ"', None, -0.0, None, "1985-05-05", ts1),
        row("us", 2, "", "0.10", 2.25, True, "2000-02-29", ts1),
        row("ap", 7, None, "7.00", 7.0, False, "1970-01-01", ts1),
    ]
    day2 = [
        # amount 10.5 = 10.50 and a new updated_at (ignored): no change
        row("eu", 1, "Alice", "10.5", 1.5, True, "1990-01-01", ts2),
        # name changed
        row("eu", 2, "Bob Jr.", "3.00", None, False, None, ts2),
        # 0.0 = -0.0: no change
        row("us", 1, 'Carol "CJ"', None, 0.0, None, "1985-05-05", ts2),
        # "" -> null is a change
        row("us", 2, None, "0.10", 2.25, True, "2000-02-29", ts2),
        # ap/7 missing: D (full) or X (delta); new key
        row("ap", 8, "Zoë ünïcødé", "8.88", 8.8, True, "1999-12-31", ts2),
    ]
    day3 = [
        row("eu", 1, "Alice", "11.00", 1.5, True, "1990-01-01", ts3),
        row("eu", 2, "Bob Jr.", "3.00", None, False, None, ts3),
        # ap/7 re-inserted with other values
        row("ap", 7, "Seven", "7.70", 7.7, True, "1970-01-01", ts3),
        row("ap", 8, "Zoë ünïcødé", "8.88", 8.8, True, "1999-12-31", ts3),
    ]
    day4 = [
        row("eu", 1, "Alice", "11.00", 1.5, False, "1990-01-01", ts4),
        row("us", 1, 'Carol "CJ"', "1.00", 0.0, True, "1985-05-05", ts4),
        row("ap", 8, "Zoë ünïcødé", "8.88", 8.8, True, "1999-12-31", ts4),
        row("sa", 3, "a,b", "0.01", 1e-7, None, None, ts4),
    ]
    return dict(zip(DATES, [day1, day2, day3, day4], strict=True))


def _normalized(record: dict[str, Any]) -> dict[str, Any]:
    return {column: record[column] for column in COLUMNS}


def _as_comparable(rows: list[dict[str, Any]], extra: list[str]) -> list[tuple]:
    def value(v: Any) -> Any:
        return v.normalize() if isinstance(v, Decimal) else v

    result = []
    for record in rows:
        result.append(
            tuple(value(record[c]) for c in COLUMNS) + tuple(str(record[c]) for c in extra)
        )
    return sorted(result, key=repr)


@pytest.mark.parametrize("extract_type", ["full", "delta"])
def test_four_dates_match_the_oracle(project: Any, extract_type: str) -> None:
    name = f"customers_{extract_type}"
    project.add_table(table_config(name, extract_type))
    state: dict[tuple, Version] = {}
    keyhashes: dict[tuple, str] = {}
    for business_date, extract in day_extracts(extract_type).items():
        project.write_csv(
            f"landing/{name}/{business_date}/{name}.csv", COLUMNS, [r["cells"] for r in extract]
        )
        outcome = project.build(business_date, name)
        assert outcome.success, outcome.text

        typed = [r["typed"] for r in extract]
        state, history = apply_extract(state, typed, business_date, KEYS, COMPARED, extract_type)

        current_rows = project.rows(f"select * from {name}_current")
        expected_current = [
            {**_normalized(v.row), "operation": v.operation, "eff_start_date": v.eff_start_date}
            for v in state.values()
        ]
        assert _as_comparable(current_rows, ["operation", "eff_start_date"]) == _as_comparable(
            expected_current, ["operation", "eff_start_date"]
        ), business_date

        history_rows = project.rows(
            f"select * from {name}_history where business_date = date'{business_date}'"
        )
        expected_history = [
            {**_normalized(v.row), "operation": v.operation, "eff_start_date": v.eff_start_date}
            for v in history
        ]
        assert _as_comparable(history_rows, ["operation", "eff_start_date"]) == _as_comparable(
            expected_history, ["operation", "eff_start_date"]
        ), business_date

        # A key keeps its keyhash for the life of the data.
        for record in current_rows:
            key = (record["region"], record["id"])
            assert keyhashes.setdefault(key, record["keyhash"]) == record["keyhash"]

    # Every date's history partition is still there, unchanged by later dates.
    dates = [
        r["business_date"].isoformat()
        for r in project.rows(
            f"select distinct business_date from {name}_history order by business_date"
        )
    ]
    assert dates == DATES

    # The SCD2 view: ap/7 is deleted, re-inserted and (full extracts) deleted again.
    versions = project.rows(
        f"select operation, valid_from, valid_to, is_current, is_deleted from {name}_scd2 "
        "where region = 'ap' and id = 7 order by valid_from"
    )
    as_text = [
        (v["operation"], str(v["valid_from"]), str(v["valid_to"]), v["is_current"], v["is_deleted"])
        for v in versions
    ]
    if extract_type == "full":
        assert as_text == [
            ("I", DATES[0], DATES[1], False, False),
            ("D", DATES[1], DATES[2], False, True),
            ("I", DATES[2], DATES[3], False, False),
            ("D", DATES[3], "None", False, True),
        ]
    else:
        assert as_text == [
            ("I", DATES[0], DATES[2], False, False),
            ("U", DATES[2], "None", True, False),
        ]
    current_versions = project.rows(f"select count(*) as n from {name}_scd2 where is_current")
    assert current_versions[0]["n"] == len(current_rows)

    # The change log: before and after images, and which columns changed.
    logged = project.rows(
        f"select * from {name}_changelog where business_date = date'{DATES[1]}' order by keyhash"
    )
    by_key = {
        (r["after_image"] or r["before_image"])["region"]
        + "/"
        + str((r["after_image"] or r["before_image"])["id"]): r
        for r in logged
    }
    bob = by_key["eu/2"]
    assert (bob["operation"], bob["before_image"]["name"], bob["after_image"]["name"]) == (
        "U",
        "Bob, Jr.",
        "Bob Jr.",
    )
    assert bob["changed_columns"] == ["name", "updated_at"]
    assert by_key["ap/8"]["operation"] == "I" and by_key["ap/8"]["before_image"] is None
    if extract_type == "full":
        seven = by_key["ap/7"]
        assert (seven["operation"], seven["after_image"]) == ("D", None)
        assert seven["before_image"]["amount"] == Decimal("7.00")
    assert len(logged) == len(
        project.rows(f"select 1 from {name}_history where business_date = date'{DATES[1]}'")
    )

    # The incoming rows the reconcile test compares with are the stage's own, counted once
    # by its checks: a W row that claims one insert more than the extract loaded breaks
    # that rule (and the state's count), though the state's rows are untouched.
    if extract_type == "full":
        claim = (
            f"update {name}_state set operation_counts = transform_values("
            "operation_counts, (k, v) -> if(k = 'I', v {} 1, v)) where operation = 'W'"
        )
        project.spark.sql(commit_metadata_statement(DATES[-1]))
        try:
            project.spark.sql(claim.format("+"))
            outcome = project.dbt("test", *table_selector([name]), business_date=DATES[-1])
            failed = [node for node, status in outcome.statuses.items() if status == "fail"]
            assert [node.split("_customers")[0] for node in failed] == [
                "hashcdc_operation_counts_reconcile"
            ], outcome.statuses
            assert "Got 2 results" in outcome.text, outcome.text
        finally:
            project.spark.sql(claim.format("-"))
            project.spark.sql(commit_metadata_statement(None))

    # A state that disagrees with the counts its date recorded fails the reconcile test:
    # one current row lost in a commit that claims the date.
    if extract_type == "full":
        project.spark.sql(commit_metadata_statement(DATES[-1]))
        try:
            project.spark.sql(f"delete from {name}_state where region = 'sa' and id = 3")
        finally:
            project.spark.sql(commit_metadata_statement(None))
        outcome = project.dbt("test", *table_selector([name]), business_date=DATES[-1])
        failed = [node for node, status in outcome.statuses.items() if status == "fail"]
        assert [node.split("_customers")[0] for node in failed] == [
            "hashcdc_operation_counts_reconcile"
        ], outcome.statuses
        assert "Got 1 result" in outcome.text, outcome.text

        # A state row of an operation `current` does not show would vanish from it: the
        # same scan reports it (a second broken rule); a history row of the date with an
        # operation other than I, U, D fails the history's own test.
        (state_key,) = project.rows(
            f"select hex(keyhash) from {name}_state where operation in ('U', 'N') limit 1"
        )[0].values()
        (history_key,) = project.rows(
            f"select hex(keyhash) from {name}_history "
            f"where business_date = date'{DATES[-1]}' limit 1"
        )[0].values()
        project.spark.sql(commit_metadata_statement(DATES[-1]))
        try:
            project.spark.sql(
                f"update {name}_state set operation = 'Q' where hex(keyhash) = '{state_key}'"
            )
        finally:
            project.spark.sql(commit_metadata_statement(None))
        project.spark.sql(
            f"update {name}_history set operation = 'Q' "
            f"where business_date = date'{DATES[-1]}' and hex(keyhash) = '{history_key}'"
        )
        outcome = project.dbt("test", *table_selector([name]), business_date=DATES[-1])
        failed = sorted(node for node, status in outcome.statuses.items() if status == "fail")
        assert [node.split("_customers")[0] for node in failed] == [
            "hashcdc_operation_counts_reconcile",
            "hashcdc_operations_of_date",
        ], outcome.statuses
        assert "Got 2 results" in outcome.text and "Got 1 result" in outcome.text, outcome.text


def run_first_two_dates(project: Any, name: str) -> dict[str, list[dict[str, Any]]]:
    """Build a full-extract table for the first two dates; returns all extracts."""
    extracts = day_extracts("full")
    for business_date in DATES[:2]:
        project.write_csv(
            f"landing/{name}/{business_date}/{name}.csv",
            COLUMNS,
            [r["cells"] for r in extracts[business_date]],
        )
        outcome = project.build(business_date, name)
        assert outcome.success, outcome.text
    return extracts


def test_rerunning_the_latest_date_is_idempotent(project: Any) -> None:
    name = "rerun_latest"
    project.add_table(table_config(name, "full"))
    run_first_two_dates(project, name)

    def snapshot() -> tuple[list, list]:
        return (
            sorted(map(repr, project.rows(f"select * from {name}_current"))),
            sorted(map(repr, project.rows(f"select * from {name}_history"))),
        )

    before = snapshot()
    # The re-run goes the plain dbt way: the date as a var, the project parsed with it.
    outcome = project.dbt(
        "build", "--vars", json.dumps({"business_date": DATES[1]}), *table_selector([name])
    )
    assert outcome.success, outcome.text
    assert snapshot() == before


def test_the_stage_is_kept_in_the_session_and_computed_again_for_a_command_without_it(
    project: Any,
) -> None:
    name = "kept_stage"
    project.add_table(table_config(name, "full"))
    run_first_two_dates(project, name)
    spark = project.spark
    schema = spark.catalog.currentDatabase()
    stage = f"{schema}.stg_{name}"
    assert not spark.catalog.tableExists(stage)  # nothing of the stage is written
    view = view_name(stage, DATES[1])
    rows = spark.table(view).count()
    assert rows == spark.table(f"{name}_current").count()
    # Its checks counted it once; the reconcile test and the audit read those counts.
    assert kept_counts(spark, stage, DATES[1]) == StageCounts(rows, 0, None)
    assert kept_counts(spark, stage, DATES[0]) is None  # another date: not this stage

    # A later process has no kept stage: `dbt test` and a rejects model run alone compute it
    # again from the date's extract (and its tests pass on it, counting it themselves).
    release_stage(spark, stage)
    assert not spark.catalog.tableExists(view)
    tested = project.dbt("test", "--select", f"{name}_state", business_date=DATES[1])
    rejects = project.dbt("run", "--select", f"{name}_rejects", business_date=DATES[1])
    assert tested.success, tested.text
    assert rejects.success, rejects.text
    assert spark.table(view).count() == spark.table(f"{name}_current").count()
    assert kept_counts(spark, stage, DATES[1]) is None

    # Without a date, `dbt test` checks the latest date the state holds, on its extract.
    release_stage(spark, stage)
    outcome = project.dbt("test", "--select", f"{name}_state")
    assert outcome.success, outcome.text


def test_a_date_older_than_the_latest_is_refused(project: Any) -> None:
    name = "out_of_order"
    project.add_table(table_config(name, "full"))
    extracts = run_first_two_dates(project, name)
    before = sorted(map(repr, project.rows(f"select * from {name}_state")))
    project.write_csv(
        f"landing/{name}/2024-02-28/{name}.csv", COLUMNS, [r["cells"] for r in extracts[DATES[0]]]
    )
    outcome = project.build("2024-02-28", name)
    assert not outcome.success
    assert "older than the latest processed date 2024-03-02" in outcome.text
    assert "Nothing was written" in outcome.text
    assert sorted(map(repr, project.rows(f"select * from {name}_state"))) == before
