"""A table group through `hashcdc run`: several tables, one stage, one diff, one commit a date.

Four tables of different shapes share group `crm`. Over four dates they get inserts,
updates, deletes, a rejected row, a missing extract, one of too many rejects and a
truncated one the delete guard refuses (each member refused, named, its previous state
kept, while its siblings are committed), a paused member, a rerun of the group's date and
one of a member's alone, a member replayed alone, retention per member, `hashcdc
compact`, a column appended to one member and one widened; each member reads as its own
tables (`<t>_current`, `_history`, `_scd2`, `_rejects`, `_changelog`, `--as-of`), with the
values and types of its own config, and its sensitive columns in the group's sensitive
tables only (`<t>_sensitive_current`, `_sensitive_history`). Tables that ran on their own
join a group, sensitive tables and all. The expected rows are written out here, never
computed by the code under test.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import socket
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from feed_events import create, delete, feed_config, json_lines, truncate, update
from outside_spark import assert_readers_agree, read_outside_spark

from hashcdc.cli import main
from hashcdc.codegen import generate
from hashcdc.config import load_table_configs
from hashcdc.pipeline import projections
from hashcdc.runtime.lock import GROUP_FOLDER, LOCK_FOLDER, _process_start

D1, D2, D3, D4 = "2024-05-01", "2024-05-02", "2024-05-03", "2024-05-04"
GROUP = "crm"
PERSON = [{"name": "id", "type": "int", "key": True}, {"name": "name", "type": "string"}]
TAG = [{"name": "code", "type": "string", "key": True}, {"name": "weight", "type": "double"}]

CONFIGS: dict[str, dict[str, Any]] = {
    "customers": {
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "name", "type": "string"},
            {"name": "score", "type": "double"},
            {"name": "email", "type": "string", "sensitive": True},
        ],
        "history_retention_days": 1,
        "changelog": True,
        "max_reject_fraction": 0.5,
    },
    "orders": {
        "columns": [
            {"name": "order_id", "type": "bigint", "key": True},
            {"name": "customer_id", "type": "int"},
            {"name": "amount", "type": "decimal(10,2)"},
            {"name": "placed", "type": "date"},
        ],
        "max_reject_fraction": 0.5,
        "rejects_retention_days": 1,
    },
    "regions": {
        "columns": [
            {"name": "code", "type": "string", "key": True},
            {"name": "label", "type": "string"},
        ],
    },
    "notes": {
        "columns": [
            {"name": "note_id", "type": "int", "key": True},
            {"name": "text", "type": "string"},
            {"name": "pinned", "type": "boolean"},
        ],
    },
}

EXTRACTS: dict[str, dict[str, list[list[Any]]]] = {
    "customers": {
        # Alice's e-mail changes on D2 (a change of her sensitive row only), Erin has none.
        # Frank's score does not cast: his rejects row shows no e-mail.
        D1: [
            [1, "alice", 1.5, "a@x.org"],
            [2, "bob", 2.0, "b@x.org"],
            [3, "carol", 3.25, "c@x.org"],
            [6, "frank", "n/a", "f@x.org"],
        ],
        D2: [
            [1, "alice", 1.5, "al@x.org"],
            [2, "bobby", 2.0, "b@x.org"],
            [4, "dave", 4.0, "d@x.org"],
        ],
        D3: [
            [1, "alice", 1.75, "al@x.org"],
            [2, "bobby", 2.0, "b@x.org"],
            [4, "dave", 4.0, "d@x.org"],
            [5, "erin", None, None],
        ],
    },
    "orders": {
        # Order 13's amount does not cast either: its rejects row goes with retention.
        D1: [[10, 1, "12.50", D1], [11, 2, "3.10", D1], [13, 9, "bad", D1]],
        # Order 11's amount does not cast: rejected, the order kept as it was (X).
        D2: [[10, 1, "12.50", D1], [11, 2, "lots", D1], [12, 3, "1.00", D2]],
        D3: [[10, 1, "12.50", D1], [11, 2, "4.10", D1], [12, 3, "1.00", D2]],
    },
    "regions": {
        D1: [["eu", "Europe"], ["us", "States"]],
        D2: [["eu", "Europe"], ["us", "United States"]],
        D3: [["eu", "Europe"], ["us", "United States"], ["ap", "Asia"]],
    },
    "notes": {
        D1: [[1, "hello", True], [2, "bye", False]],
        D2: [[1, "hello", False]],
    },
}


def _config(
    name: str,
    configs: dict[str, dict[str, Any]] = CONFIGS,
    group: str | None = GROUP,
    extract_type: str = "full",
) -> dict[str, Any]:
    return {
        "name": name,
        "extract_type": extract_type,
        **({"group": group} if group else {}),
        "source": f"landing/{name}/{{business_date}}",
        **configs[name],
    }


def _write(project: Any, name: str, date: str) -> None:
    header = [c["name"] for c in CONFIGS[name]["columns"]]
    project.write_csv(f"landing/{name}/{date}/part.csv", header, EXTRACTS[name][date])


def _configure(project: Any, configs: dict[str, dict[str, Any]]) -> None:
    for name, config in configs.items():
        (project.root / "tables" / f"{name}.yml").write_text(
            yaml.safe_dump(config, sort_keys=False), encoding="utf-8"
        )
    generate.write(project.root, load_table_configs(project.root / "tables"))


def _run(project: Any, capsys: Any, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--project-dir", str(project.root), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _built(project: Any) -> set[str]:
    """The nodes the last dbt command built or tested, by name (its run_results.json)."""
    results = json.loads((project.root / "target" / "run_results.json").read_text())
    return {result["unique_id"].split(".")[-1] for result in results["results"]}


def _current(project: Any, table: str, columns: str) -> set[tuple[Any, ...]]:
    return {tuple(r.values()) for r in project.rows(f"select {columns} from {table}_current")}


def _emails(project: Any, relation: str = "customers_sensitive_current") -> set[tuple[Any, ...]]:
    """Each customer's sensitive row (id from the main current view, by keyhash)."""
    rows = project.rows(
        f"select c.id, s.email from customers_current c join {relation} s using (keyhash)"
    )
    return {tuple(r.values()) for r in rows}


def _counts(project: Any, date: str) -> dict[str, tuple[int, ...]]:
    rows = project.rows(
        "select table_name, rows_in, rejects, inserted, updated, deleted, not_supplied, "
        f"unchanged, status from cdc_runs where business_date = date'{date}' "
        "and status != 'error' order by table_name, ended_at"
    )
    return {r.pop("table_name"): tuple(r.values()) for r in rows}


def test_a_group_of_four_tables_over_four_dates(
    project: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The members' rows are unioned two at a time, then the pairs, as the members of a
    # group larger than UNION_BRANCHES are (Spark's parser refuses 1,000 branches).
    monkeypatch.setattr(projections, "UNION_BRANCHES", 2)
    _configure(project, {name: _config(name) for name in CONFIGS})
    for name in CONFIGS:
        _write(project, name, D1)
        if D2 in EXTRACTS[name]:
            _write(project, name, D2)

    # Two dates in one run: each one stage, one diff and one commit for the four tables.
    code, out = _run(project, capsys, "run", "--date", D1, D2)
    assert code == 0, out[-3000:]
    # The package's seed (the demo's expected counts) was loaded with the first date; it
    # stands, so the second date's build left it out.
    assert project.rows("select count(*) as n from demo_expected_counts")[0]["n"] > 0
    assert "demo_expected_counts" not in _built(project)
    assert "stg_crm" in _built(project)
    assert _counts(project, D1) == {
        "customers": (4, 1, 3, 0, 0, 0, 0, "warn"),
        "notes": (2, 0, 2, 0, 0, 0, 0, "success"),
        "orders": (3, 1, 2, 0, 0, 0, 0, "warn"),
        "regions": (2, 0, 2, 0, 0, 0, 0, "success"),
    }
    # Day two: orders' rejected row warns (the rejects test) and keeps order 11 (X).
    assert _counts(project, D2) == {
        "customers": (3, 0, 1, 1, 1, 0, 1, "success"),
        "notes": (1, 0, 0, 1, 1, 0, 0, "success"),
        "orders": (3, 1, 1, 0, 0, 1, 1, "warn"),
        "regions": (2, 0, 0, 1, 0, 0, 1, "success"),
    }
    assert _current(project, "customers", "id, name, score") == {
        (1, "alice", 1.5), (2, "bobby", 2.0), (4, "dave", 4.0),
    }  # fmt: skip
    assert _current(project, "orders", "order_id, customer_id, amount, placed") == {
        (10, 1, Decimal("12.50"), dt.date(2024, 5, 1)),
        (11, 2, Decimal("3.10"), dt.date(2024, 5, 1)),
        (12, 3, Decimal("1.00"), dt.date(2024, 5, 2)),
    }
    assert _current(project, "notes", "note_id, text, pinned") == {(1, "hello", False)}
    # Customers' e-mail is sensitive: kept in the group's sensitive tables only, compared
    # by its own hash (alice's new e-mail is no update of her main row), read by keyhash.
    assert _emails(project) == {(1, "al@x.org"), (2, "b@x.org"), (4, "d@x.org")}
    sensitive_history = project.rows(
        "select business_date, operation, email from customers_sensitive_history order by 1, 3"
    )
    assert [(str(r["business_date"]), r["operation"], r["email"]) for r in sensitive_history] == [
        (D1, "I", "a@x.org"), (D1, "I", "b@x.org"), (D1, "I", "c@x.org"),
        (D2, "U", "al@x.org"), (D2, "D", "c@x.org"), (D2, "I", "d@x.org"),
    ]  # fmt: skip
    for relation in (
        f"{GROUP}_state",
        f"{GROUP}_history",
        f"{GROUP}_changelog",
        "customers_current",
    ):
        described = [r["col_name"] for r in project.rows(f"describe table {relation}")]
        assert not any("sensitive" in c or c == "email" for c in described), (relation, described)
    assert project.rows(
        f"select count(*) as n from {GROUP}_state where string_1 like '%@x.org' "
        "or string_2 like '%@x.org'"
    ) == [{"n": 0}]
    for relation in ("state", "history", "changelog", "rejects"):
        files = list(Path(_location(project, f"{GROUP}_{relation}")).rglob("*.parquet"))
        assert files and not any(b"x.org" in f.read_bytes() for f in files), relation
    # Each member's views have its own columns and types, not the group's slots.
    types = {
        r["col_name"]: r["data_type"]
        for r in project.rows("describe table orders_current")
        if not r["col_name"].startswith("#")
    }
    assert types == {
        "order_id": "bigint", "customer_id": "int", "amount": "decimal(10,2)",
        "placed": "date", "keyhash": "binary", "nonkeyhash": "binary",
        "operation": "string", "eff_start_date": "date",
    }  # fmt: skip
    [rejected] = project.rows(
        "select business_date, reasons, raw_values from orders_rejects "
        f"where business_date = '{D2}'"
    )
    assert rejected["business_date"] == dt.date(2024, 5, 2)
    assert rejected["raw_values"]["amount"] == "lots"
    assert "amount" in rejected["reasons"][0]
    # A member's rejects mask its sensitive values, as a table's own do (and the group's
    # rejects files hold no e-mail: the byte scan above).
    [frank] = project.rows("select raw_values from customers_rejects")
    assert frank["raw_values"]["score"] == "n/a"
    assert frank["raw_values"]["email"] == "(sensitive value)"
    history = project.rows(
        "select business_date, operation, id, name from customers_history order by 1, 3"
    )
    assert [(str(r["business_date"]), r["operation"], r["id"], r["name"]) for r in history] == [
        (D1, "I", 1, "alice"), (D1, "I", 2, "bob"), (D1, "I", 3, "carol"),
        (D2, "U", 2, "bobby"), (D2, "D", 3, "carol"), (D2, "I", 4, "dave"),
    ]  # fmt: skip
    # Customers keeps a changelog: its view of the group's, with its own columns.
    changes = {
        r["operation"]: r
        for r in project.rows(f"select * from customers_changelog where business_date = '{D2}'")
    }
    assert changes["U"]["before_image"].asDict() == {"id": 2, "name": "bob", "score": 2.0}
    assert changes["U"]["after_image"].asDict() == {"id": 2, "name": "bobby", "score": 2.0}
    assert changes["U"]["changed_columns"] == ["name"]
    assert changes["I"]["before_image"] is None and changes["I"]["after_image"]["id"] == 4
    assert changes["D"]["before_image"]["name"] == "carol" and changes["D"]["after_image"] is None
    assert project.rows(f"select distinct table_name from {GROUP}_changelog") == [
        {"table_name": "customers"}
    ]
    scd2 = project.rows("select code, label, valid_from, valid_to from regions_scd2 order by 1, 3")
    assert [(r["code"], r["label"], str(r["valid_from"]), str(r["valid_to"])) for r in scd2] == [
        ("eu", "Europe", D1, "None"), ("us", "States", D1, D2), ("us", "United States", D2, "None"),
    ]  # fmt: skip

    # Day three: notes is paused; regions' extract is missing and orders' rejects exceed
    # its limit, so those two are refused, named, and keep their previous state, while
    # customers is committed.
    _configure(project, {"notes": {**_config("notes"), "enabled": False}})
    _write(project, "customers", D3)
    header = [c["name"] for c in CONFIGS["orders"]["columns"]]
    bad_orders = [[10, 1, "x", D1], [11, 2, "y", D1], [12, 3, "1.00", D2]]
    project.write_csv(f"landing/orders/{D3}/part.csv", header, bad_orders)
    regions_before = _current(project, "regions", "code, label")
    # A seed of the project's own is loaded with every date (its own tests may read it),
    # the package's standing one still not.
    project.write_csv("seeds/region_names.csv", ["code", "name"], [["eu", "Europe"]])
    code, out = _run(project, capsys, "run", "--date", D3)
    assert code != 0
    assert "region_names" in _built(project) and "demo_expected_counts" not in _built(project)
    assert "table 'regions'" in out and "no extract for business date 2024-05-03" in out, out[
        -3000:
    ]
    assert "table 'orders'" in out and "max_reject_fraction" in out, out[-3000:]
    assert _current(project, "customers", "id, score") == {(1, 1.75), (2, 2.0), (4, 4.0), (5, None)}
    assert _emails(project) == {(1, "al@x.org"), (2, "b@x.org"), (4, "d@x.org"), (5, None)}
    assert _current(project, "regions", "code, label") == regions_before
    assert (12, 3) in _current(project, "orders", "order_id, customer_id")
    assert project.rows(
        f"select count(*) as n from orders_history where business_date = '{D3}'"
    ) == [{"n": 0}]
    assert project.rows(
        f"select count(*) as n from orders_rejects where business_date = '{D3}'"
    ) == [{"n": 0}]
    statuses = {
        r["table_name"]: (r["status"], r["error_message"] or "")
        for r in project.rows(
            f"select table_name, status, error_message from cdc_runs where business_date = '{D3}'"
        )
    }
    assert statuses["customers"] == ("success", "")
    assert statuses["regions"][0] == "error" and "no extract" in statuses["regions"][1]
    assert statuses["orders"][0] == "error" and "max_reject_fraction" in statuses["orders"][1]

    # Orders delivered, and regions truncated to one new row: the delete guard refuses
    # regions alone (it would delete both its rows), names it, and keeps its state; the
    # others are committed in the same commit.
    project.write_csv(f"landing/regions/{D3}/part.csv", ["code", "label"], [["ap", "Asia"]])
    _write(project, "orders", D3)
    code, out = _run(project, capsys, "run", "--date", D3)
    assert code != 0
    assert "table 'regions'" in out and "would delete 2 of 2 current rows" in out, out[-3000:]
    assert "--select regions --allow-mass-delete" in out, out[-3000:]
    assert _current(project, "regions", "code, label") == regions_before
    assert (11, Decimal("4.10")) in _current(project, "orders", "order_id, amount")
    [guarded] = project.rows(
        "select status, error_message from cdc_runs where table_name = 'regions' "
        "order by ended_at desc limit 1"
    )
    assert guarded["status"] == "error" and "max_delete_fraction" in guarded["error_message"]

    # The extracts delivered, the date run again: the paused member is not read (its rows
    # stay, not deleted), the others move on.
    _write(project, "regions", D3)
    code, out = _run(project, capsys, "run", "--date", D3)
    assert code == 0, out[-3000:]
    assert "region_names" in _built(project)
    counts = _counts(project, D3)
    assert set(counts) == {"customers", "orders", "regions"}
    assert counts["customers"][:7] == (4, 0, 1, 1, 0, 0, 2)
    assert counts["orders"][:7] == (3, 0, 0, 1, 0, 0, 2)
    assert _current(project, "notes", "note_id, text, pinned") == {(1, "hello", False)}
    assert _current(project, "regions", "code, label") == {
        ("eu", "Europe"), ("us", "United States"), ("ap", "Asia"),
    }  # fmt: skip
    assert _current(project, "customers", "id, score") == {(1, 1.75), (2, 2.0), (4, 4.0), (5, None)}

    # The group's views stood through the dates after the first: not re-created each date.
    [log] = sorted(project.root.glob("logs/run-*/dbt.log"))[-1:]
    built = [line for line in log.read_text().splitlines() if "START sql view model" in line]
    assert built == [], built[:3]

    # The latest date run again (a rerun of the group's date) gives the same rows.
    before = project.rows("select * from crm_state where operation != 'W'")
    code, out = _run(project, capsys, "run", "--date", D3)
    assert code == 0, out[-3000:]
    assert _counts(project, D3)["customers"][:7] == (4, 0, 1, 1, 0, 0, 2)
    after = project.rows("select * from crm_state where operation != 'W'")
    key = lambda row: (row["table_name"], row["keyhash"])  # noqa: E731
    assert sorted(after, key=key) == sorted(before, key=key)

    # One member's date run again alone (--select): its rows move, its siblings' stay (no
    # RESTORE of the group's state, no replace of their history's date).
    siblings = "select * from crm_state where table_name != 'customers'"
    siblings_history = (
        f"select * from crm_history where table_name != 'customers' and business_date = '{D3}'"
    )
    state_before, history_before = project.rows(siblings), project.rows(siblings_history)
    # The W rows (one a member, no keyhash) are compared too.
    key = lambda row: (row["table_name"], row["operation"], bytes(row["keyhash"] or b""))  # noqa: E731
    header = [c["name"] for c in CONFIGS["customers"]["columns"]]
    project.write_csv(
        f"landing/customers/{D3}/part.csv",
        header,
        [*EXTRACTS["customers"][D3][:3], [5, "erin", 5.5, "e@x.org"]],
    )
    code, out = _run(project, capsys, "run", "--date", D3, "--select", "customers")
    assert code == 0, out[-3000:]
    assert _current(project, "customers", "id, score") == {(1, 1.75), (2, 2.0), (4, 4.0), (5, 5.5)}
    assert project.rows(
        f"select id, score from customers_history where business_date = '{D3}' and id = 5"
    ) == [{"id": 5, "score": 5.5}]
    assert (5, "e@x.org") in _emails(project)
    assert project.rows(
        "select operation, email from customers_sensitive_history "
        f"where business_date = '{D3}' and email like 'e%'"
    ) == [{"operation": "I", "email": "e@x.org"}]
    assert sorted(project.rows(siblings), key=key) == sorted(state_before, key=key)
    assert sorted(project.rows(siblings_history), key=key) == sorted(history_before, key=key)
    [latest] = project.rows("select invocation_id from cdc_runs order by ended_at desc limit 1")
    audited = project.rows(
        f"select table_name from cdc_runs where invocation_id = '{latest['invocation_id']}'"
    )
    assert audited == [{"table_name": "customers"}]
    operations = [r["operation"] for r in project.rows(f"describe history {GROUP}_state limit 3")]
    assert "RESTORE" not in operations, operations

    # One member replayed alone (its D2 and D3 computed again), then a sibling's latest
    # date rerun alone: each member is put back to its own version of the date before
    # (the replay's commits are the replayed member's only), so regions' D3 is computed
    # from its D2 again, and a member as of D2 reads its own D2 rows.
    regions_d3 = _counts(project, D3)["regions"]
    code, out = _run(project, capsys, "replay", "--from", D2, "--select", "orders")
    assert code == 0, out[-3000:]
    assert "recomputed 2024-05-02, 2024-05-03" in out, out[-3000:]
    assert _counts(project, D2)["orders"] == (3, 1, 1, 0, 0, 1, 1, "warn")
    assert _counts(project, D3)["orders"][:7] == (3, 0, 0, 1, 0, 0, 2)
    code, out = _run(project, capsys, "run", "--date", D3, "--select", "regions")
    assert code == 0, out[-3000:]
    assert _counts(project, D3)["regions"] == regions_d3
    assert regions_d3[:7] == (3, 0, 1, 0, 0, 0, 2)
    code, out = _run(
        project, capsys, "query", "--as-of", D2, "select code, label from regions_current"
    )
    assert code == 0, out
    assert sorted(out.strip().splitlines()[-2:]) == ["eu,Europe", "us,United States"]

    # Retention per member, in the group's one history and rejects: customers keeps one
    # day of history before the date, orders one day of rejects; the others keep all.
    def dates_of(relation: str) -> set[str]:
        found = project.rows(f"select distinct cast(business_date as string) as d from {relation}")
        return {r["d"] for r in found}

    assert dates_of("customers_history") == {D2, D3}
    assert dates_of("customers_sensitive_history") == {D2, D3}
    assert dates_of("orders_history") == {D1, D2, D3}
    assert dates_of("orders_rejects") == {D2}

    # `hashcdc compact` of a member compacts its group's tables (once), then a member reads
    # as before: now and as of an earlier date.
    current_before = project.rows("select * from customers_current")
    code, out = _run(project, capsys, "compact", "--select", "customers", "regions")
    assert code == 0, out[-3000:]
    compacted = [line.split(":")[0] for line in out.splitlines() if line.endswith(": compacting")]
    assert [name.split(".")[-1] for name in compacted] == [
        f"{GROUP}_state", f"{GROUP}_history", f"{GROUP}_rejects",
        f"{GROUP}_sensitive_state", f"{GROUP}_sensitive_history",
    ]  # fmt: skip
    assert "not a Delta table" not in out, out
    key = lambda row: bytes(row["keyhash"])  # noqa: E731
    assert sorted(project.rows("select * from customers_current"), key=key) == sorted(
        current_before, key=key
    )

    # A member as of an earlier date, as a reader asks for it.
    code, out = _run(
        project,
        capsys,
        "query",
        "--as-of",
        D1,
        "select id, name from customers_current order by id",
    )
    assert code == 0, out
    assert out.strip().splitlines()[-3:] == ["1,alice", "2,bob", "3,carol"]

    # The slot map is on the group's state for readers without Spark.
    properties = {r["key"]: r["value"] for r in project.rows(f"show tblproperties {GROUP}_state")}
    assert "orders:amount=decimal_s2_1" in properties["hashcdc.slots"]

    # DuckDB, polars and delta-rs, in a process without Spark, read a member from the
    # group's files by the documented filter as `hashcdc query` reads its views.
    columns = ["order_id", "customer_id", "amount", "placed"]
    current_sql = f"select {', '.join(columns)}, operation from orders_current"
    history_sql = f"select {', '.join(columns)}, operation, business_date from orders_history"
    expected = {"current": _query(project, capsys, current_sql)}
    expected["history"] = _query(project, capsys, history_sql)
    expected[f"current@{D1}"] = _query(project, capsys, current_sql, D1)
    expected[f"history@{D1}"] = _query(project, capsys, history_sql, D1)
    assert expected["current@2024-05-01"] != expected["current"]
    found = read_outside_spark(
        project.root / "readers.json",
        {
            "state": _location(project, f"{GROUP}_state"),
            "history": _location(project, f"{GROUP}_history"),
            "member": "orders",
            "columns": [*columns, "operation"],
            "history_columns": [*columns, "operation", "business_date"],
            "dates": [D1],
        },
    )
    assert_readers_agree(found, expected)

    # Day four: a column appended to one member's config (no `added:`) takes a new slot;
    # its first date is inferred and recorded, its rows that differ only by it are no
    # updates, and the member's views have it with its type.
    # And one member's column widened (int to bigint: an exact widening keeps its slot and
    # its hashes), with a value beyond int.
    # A sensitive column appended too: its first date is its group's sensitive state's.
    joined = {"name": "joined", "type": "timestamp"}
    phone = {"name": "phone", "type": "string", "sensitive": True}
    customers = _config("customers")
    customers["columns"] = [*CONFIGS["customers"]["columns"], joined, phone]
    # Orders' placed date is no longer sent (removed), regions' label is renamed title.
    orders = _config("orders")
    orders["columns"] = [
        {**c, "type": "bigint"}
        if c["name"] == "customer_id"
        else {**c, "removed": D4}
        if c["name"] == "placed"
        else c
        for c in CONFIGS["orders"]["columns"]
    ]
    regions = _config("regions")
    regions["columns"] = [
        CONFIGS["regions"]["columns"][0],
        {"name": "title", "type": "string", "renamed_from": ["label"]},
    ]
    _configure(project, {"customers": customers, "orders": orders, "regions": regions})
    project.write_csv(
        f"landing/customers/{D4}/part.csv",
        ["id", "name", "score", "email", "joined", "phone"],
        [[1, "alice", 1.75, "al@x.org", "2024-01-02 10:00:00", "555"],
         [2, "bobby", 2.0, "b@x.org", "", ""], [4, "dave", 4.5, "d@x.org", "", ""],
         [5, "erin", 5.5, "e@x.org", "", ""]],
    )  # fmt: skip
    project.write_csv(
        f"landing/orders/{D4}/part.csv",
        ["order_id", "customer_id", "amount"],
        [row[:3] for row in EXTRACTS["orders"][D3]] + [[14, 3_000_000_000, "2.00"]],
    )
    project.write_csv(f"landing/regions/{D4}/part.csv", ["code", "title"], EXTRACTS["regions"][D3])
    code, out = _run(project, capsys, "run", "--date", D4)
    assert code == 0, out[-3000:]
    assert "column(s) 'joined' first appear in the extract of 2024-05-04" in out, out[-3000:]
    assert "column(s) 'phone' first appear in the extract of 2024-05-04" in out, out[-3000:]
    # Alice's phone, the one value, is no update of her sensitive row either.
    assert project.rows(
        f"select count(*) as n from customers_sensitive_history where business_date = '{D4}'"
    ) == [{"n": 0}]
    assert project.rows(
        "select c.id, s.phone from customers_current c join customers_sensitive_current s "
        "using (keyhash) order by 1"
    ) == [{"id": 1, "phone": "555"}, *({"id": i, "phone": ""} for i in (2, 4, 5))]
    sensitive_properties = {
        r["key"]: r["value"] for r in project.rows(f"show tblproperties {GROUP}_sensitive_state")
    }
    assert sensitive_properties["hashcdc.slots"] == (
        "customers:email=sensitive_string_1;customers:phone=sensitive_string_2"
    )
    assert sensitive_properties["hashcdc.added.customers.phone"] == D4
    # Dave's score is the one update; the others differ by the added column only (N).
    assert _counts(project, D4)["customers"] == (4, 0, 0, 1, 0, 0, 3, "success")
    assert project.rows("select id, joined from customers_current where joined is not null") == [
        {"id": 1, "joined": dt.datetime(2024, 1, 2, 10, 0)}
    ]
    assert project.rows(
        f"select id, score from customers_history where business_date = '{D4}'"
    ) == [{"id": 4, "score": 4.5}]
    types = {
        r["col_name"]: r["data_type"] for r in project.rows("describe table customers_current")
    }
    assert types["joined"] == "timestamp"
    # The widened member: its one new order is the one change (a column no longer sent
    # is no update either), its view has the new type.
    assert _counts(project, D4)["orders"] == (4, 0, 1, 0, 0, 0, 3, "success")
    # The renamed column keeps its slot and its hashes: no update, the view has its name.
    assert _counts(project, D4)["regions"][3] == 0
    assert ("eu", "Europe") in _current(project, "regions", "code, title")
    properties = {r["key"]: r["value"] for r in project.rows(f"show tblproperties {GROUP}_state")}
    assert "regions:title=string_2" in properties["hashcdc.slots"]
    assert project.rows("select order_id, customer_id from orders_current where order_id = 14") == [
        {"order_id": 14, "customer_id": 3_000_000_000}
    ]
    types = {r["col_name"]: r["data_type"] for r in project.rows("describe table orders_current")}
    assert types["customer_id"] == "bigint"
    properties = {r["key"]: r["value"] for r in project.rows(f"show tblproperties {GROUP}_state")}
    assert "customers:joined=timestamp_1" in properties["hashcdc.slots"]
    assert properties["hashcdc.added.customers.joined"] == D4
    # Before the column, the member reads as it was.
    code, out = _run(project, capsys, "query", "--as-of", D3, "select id from customers_current")
    assert code == 0, out
    assert sorted(out.strip().splitlines()[-4:]) == ["1", "2", "4", "5"]


def _location(project: Any, table: str) -> str:
    return str(project.rows(f"describe detail {table}")[0]["location"]).removeprefix("file:")


def _query(project: Any, capsys: Any, sql: str, as_of: str | None = None) -> list[list[str]]:
    """`hashcdc query`'s CSV rows (sorted, without the header)."""
    dated = ["--as-of", as_of] if as_of else []
    code, out = _run(project, capsys, "query", *dated, sql)
    assert code == 0, out
    return sorted(list(csv.reader(io.StringIO(out)))[1:])


JOINING: dict[str, dict[str, Any]] = {
    "accounts": {
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "name", "type": "string"},
            {"name": "balance", "type": "decimal(10,2)"},
        ],
        "changelog": True,
    },
    "labels": {
        "columns": [
            {"name": "code", "type": "string", "key": True},
            {"name": "text", "type": "string"},
            {"name": "owner", "type": "string", "sensitive": True},
        ],
    },
    "ledgers": {
        "columns": [
            {"name": "id", "type": "bigint", "key": True},
            {"name": "total", "type": "double"},
            {"name": "auditor", "type": "string", "sensitive": True},
        ],
    },
}
JOINING_EXTRACTS: dict[str, dict[str, list[list[Any]]]] = {
    "accounts": {
        D1: [[1, "a", "1.00"], [2, "b", "2.00"], [3, "c", "3.00"]],
        D2: [[1, "a", "1.50"], [2, "b", "2.00"], [4, "d", "4.00"]],
        D3: [[1, "a", "1.50"], [2, "bb", "2.00"], [4, "d", "4.00"], [5, "e", "5.00"]],
        D4: [[1, "a", "1.50"], [2, "b", "2.00"], [4, "d", "4.00"]],
    },
    # The owners change alone: x's on D2 (on its own), z's on D3 (in the group).
    "labels": {
        D1: [["x", "ex", "o1"], ["y", "why", "o2"]],
        D2: [["x", "ex", "o1b"], ["y", "why", "o2"], ["z", "zed", "o3"]],
        D3: [["x", "ex", "o1b"], ["z", "zed", "o3c"]],
        D4: [["x", "ex", "o1b"], ["z", "zed", "o3c"]],
    },
    # The auditor changes alone on D3, before ledgers joins the group.
    "ledgers": {
        D1: [[1, 1.0, "p"]],
        D2: [[1, 2.0, "p"]],
        D3: [[1, 2.0, "q"]],
        D4: [[1, 2.0, "q"]],
    },
}


def _joining(project: Any, names: list[str], group: str | None) -> None:
    _configure(project, {name: _config(name, JOINING, group) for name in names})


def test_tables_that_ran_on_their_own_join_a_group(
    project: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tables that ran two dates on their own are put in a group: they go on from there.

    Their dates, history and rejects become the group's (a rerun of one of them restores
    its rows of the date before from a joined commit; `--as-of` reads a date it ran on its
    own); a table with dates of its own joins a group that has run dates too.
    """
    for name, dates in JOINING_EXTRACTS.items():
        for date, rows in dates.items():
            header = [c["name"] for c in JOINING[name]["columns"]]
            project.write_csv(f"landing/{name}/{date}/part.csv", header, rows)
    _joining(project, list(JOINING), None)
    code, out = _run(project, capsys, "run", "--date", D1, D2)
    assert code == 0, out[-3000:]

    # The configs of two of them name group `books`: the next date joins them first.
    _joining(project, ["accounts", "labels"], "books")
    code, out = _run(project, capsys, "run", "--date", D3)
    assert code == 0, out[-3000:]
    assert "table 'accounts' joined group 'books': its dates (2024-05-01 to 2024-05-02)" in out
    counts = _counts(project, D3)
    # Only the date's own changes: the joined state is the date before, hashes and all.
    assert counts["accounts"] == (4, 0, 1, 1, 0, 0, 2, "success")
    assert counts["labels"] == (2, 0, 0, 0, 1, 0, 2, "success")
    tables = {r["tableName"]: r["isTemporary"] for r in project.rows("show tables")}
    assert not {"accounts_state", "labels_state", "labels_sensitive_state"} & set(tables)
    assert {"books_state", "books_history", "ledgers_state"} <= set(tables)
    # Labels' sensitive tables joined the group's: its dates on its own, then the group's.
    owners = project.rows("select owner, operation, business_date from labels_sensitive_history")
    assert sorted((r["owner"], r["operation"], str(r["business_date"])) for r in owners) == [
        ("o1", "I", D1), ("o1b", "U", D2), ("o2", "D", D3), ("o2", "I", D1),
        ("o3", "I", D2), ("o3c", "U", D3),
    ]  # fmt: skip
    assert project.rows(
        "select l.code, s.owner from labels_current l join labels_sensitive_current s "
        "using (keyhash) order by 1"
    ) == [{"code": "x", "owner": "o1b"}, {"code": "z", "owner": "o3c"}]
    assert {"books_sensitive_state", "books_sensitive_history"} <= set(tables)
    history = {
        (r["id"], r["operation"], str(r["business_date"]))
        for r in project.rows("select id, operation, business_date from accounts_history")
    }
    assert history == {
        (1, "I", D1), (2, "I", D1), (3, "I", D1),
        (1, "U", D2), (3, "D", D2), (4, "I", D2),
        (2, "U", D3), (5, "I", D3),
    }  # fmt: skip
    # Its changelog too: the dates it ran on its own, then the group's, as one view.
    images = {
        (str(r["business_date"]), r["operation"], (r["after_image"] or r["before_image"])["id"]): r
        for r in project.rows("select * from accounts_changelog")
    }
    assert sorted(images) == [
        (D1, "I", 1), (D1, "I", 2), (D1, "I", 3),
        (D2, "D", 3), (D2, "I", 4), (D2, "U", 1),
        (D3, "I", 5), (D3, "U", 2),
    ]  # fmt: skip
    assert images[(D2, "U", 1)]["before_image"]["balance"] == Decimal("1.00")
    assert images[(D2, "U", 1)]["changed_columns"] == ["balance"]
    assert images[(D3, "U", 2)]["changed_columns"] == ["name"]
    assert "accounts_changelog" in tables and not tables["accounts_changelog"]
    # A date it ran on its own, read from the group's log.
    code, out = _run(project, capsys, "query", "--as-of", D1, "select id from accounts_current")
    assert code == 0, out
    assert sorted(out.strip().splitlines()[-3:]) == ["1", "2", "3"], out

    # One member's rerun puts its rows back to the joined commit of D2, its sibling's stay.
    project.write_csv(
        f"landing/accounts/{D3}/part.csv",
        ["id", "name", "balance"],
        [[1, "a", "1.50"], [2, "b", "2.00"], [4, "d", "4.00"]],
    )
    code, out = _run(project, capsys, "run", "--date", D3, "--select", "accounts")
    assert code == 0, out[-3000:]
    assert _counts(project, D3)["accounts"] == (3, 0, 0, 0, 0, 0, 3, "success")
    assert _current(project, "accounts", "id, name") == {(1, "a"), (2, "b"), (4, "d")}
    assert _current(project, "labels", "code") == {("x",), ("z",)}

    # A table with dates of its own joins the group after its first dates (`hashcdc
    # upgrade`, without a date): its dates come after the group's in the log, its own
    # views go, and the next date builds its member views.
    _joining(project, ["accounts", "labels", "ledgers"], "books")
    code, out = _run(project, capsys, "upgrade")
    assert code == 0, out[-3000:]
    said = " ".join(out.split())  # as wrapped for the terminal
    assert "table 'ledgers' joined group 'books': its dates (2024-05-01 to 2024-05-03)" in said
    tables = {r["tableName"] for r in project.rows("show tables")}
    assert not {"ledgers_current", "ledgers_sensitive_current"} & tables, tables
    code, out = _run(project, capsys, "run", "--date", D4)
    assert code == 0, out[-3000:]
    counts = _counts(project, D4)
    assert counts["ledgers"] == (1, 0, 0, 0, 0, 0, 1, "success")
    assert counts["accounts"] == (3, 0, 0, 0, 0, 0, 3, "success")
    assert counts["labels"] == (2, 0, 0, 0, 0, 0, 2, "success")
    history = project.rows("select id, total, operation, business_date from ledgers_history")
    assert sorted((r["operation"], str(r["business_date"]), r["total"]) for r in history) == [
        ("I", D1, 1.0), ("U", D2, 2.0),
    ]  # fmt: skip
    code, out = _run(project, capsys, "query", "--as-of", D1, "select total from ledgers_current")
    assert code == 0 and out.strip().splitlines()[-1] == "1.0", out
    tables = {r["tableName"] for r in project.rows("show tables")}
    assert not {"ledgers_state", "ledgers_sensitive_state"} & tables, tables
    # Its sensitive tables joined the group's, which held labels' already.
    audits = project.rows("select auditor, operation, business_date from ledgers_sensitive_history")
    assert sorted((r["operation"], str(r["business_date"]), r["auditor"]) for r in audits) == [
        ("I", D1, "p"), ("U", D3, "q"),
    ]  # fmt: skip
    assert project.rows(
        "select l.id, s.auditor from ledgers_current l join ledgers_sensitive_current s "
        "using (keyhash)"
    ) == [{"id": 1, "auditor": "q"}]


def test_a_group_of_change_feeds(project: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Three change feeds in one group: each member its own keys, truncates and watermark.

    Both feeds use the same log positions, so a watermark shared by the group would skip
    one member's events; ``people`` is the worked example of tests/functional/test_feeds.py.
    """
    people = feed_config("people", PERSON, changelog=True) | {"group": "log"}
    owner = {"name": "owner", "type": "string", "sensitive": True}
    tags = feed_config("tags", [*TAG, owner]) | {"group": "log"}
    # Alike to people (a changelog is not part of the stage's plan): read with it, but on
    # the date its events carry the unavailable-value placeholder, by a plan of its own
    # that fills it from its own previous row.
    folks = feed_config("folks", PERSON) | {"group": "log"}
    _configure(project, {"people": people, "tags": tags, "folks": folks})
    people_events = [
        [
            create(1, id=0, name="alice"),
            update(2, {"id": 0, "name": "alice"}, id=1, name="alice"),
            update(3, {"id": 1, "name": "alice"}, id=2, name="alice"),
        ],
        [delete(4, id=2), create(5, id=0, name="Alice"), create(6, id=1, name="blob")],
        [update(7, {"id": 1, "name": "blob"}, id=1, name="Bob")],
    ]
    tag_events = [
        [create(1, code="a", weight=1.0), create(2, code="b", weight=2.0), create(3, code="c")],
        # Everything before the truncate is void: a, b and c are gone, d is new.
        [update(4, {"code": "b"}, code="b", weight=2.5), delete(5, code="c"), truncate(6),
         create(7, code="d", weight=4.0, owner="o1")],
        [update(8, {"code": "d"}, code="d", weight=4.5, owner="o1"),
         create(9, code="e", weight=5.0, owner="o2")],
    ]  # fmt: skip
    folk_events = [
        [create(1, id=1, name="fred")],
        [
            update(2, {"id": 1}, id=1, name="__debezium_unavailable_value"),
            create(3, id=2, name="gina"),
        ],
        [update(4, {"id": 2, "name": "gina"}, id=2, name="gin")],
    ]
    for date, mine, theirs, folk in zip(
        (D1, D2, D3), people_events, tag_events, folk_events, strict=True
    ):
        project.write_text(f"landing/people/{date}/events.json", json_lines(mine))
        project.write_text(f"landing/tags/{date}/events.json", json_lines(theirs))
        project.write_text(f"landing/folks/{date}/events.json", json_lines(folk))
    # D2's events delivered again on D3: below the watermark, applied once.
    project.write_text(f"landing/tags/{D3}/again.json", json_lines(tag_events[1]))

    code, out = _run(project, capsys, "run", "--date", D1, D2, D3)
    assert code == 0, out[-3000:]
    assert "1 event(s) at or below the watermark" not in out
    assert "4 event(s) at or below the watermark" in " ".join(out.split())

    assert _current(project, "people", "id, name") == {(0, "Alice"), (1, "Bob")}
    assert _current(project, "tags", "code, weight, operation") == {
        ("d", 4.5, "U"),
        ("e", 5.0, "I"),
    }
    assert _current(project, "folks", "id, name") == {(1, "fred"), (2, "gin")}
    history = {
        (str(r["business_date"]), r["operation"], r["id"], r["name"])
        for r in project.rows("select business_date, operation, id, name from people_history")
    }
    assert history == {
        (D1, "I", 2, "alice"),
        (D2, "I", 0, "Alice"), (D2, "I", 1, "blob"), (D2, "D", 2, "alice"),
        (D3, "U", 1, "Bob"),
    }  # fmt: skip
    history = {
        (str(r["business_date"]), r["operation"], r["code"])
        for r in project.rows("select business_date, operation, code from tags_history")
    }
    assert history == {
        (D1, "I", "a"), (D1, "I", "b"), (D1, "I", "c"),
        (D2, "D", "a"), (D2, "D", "b"), (D2, "D", "c"), (D2, "I", "d"),
        (D3, "U", "d"), (D3, "I", "e"),
    }  # fmt: skip
    changelog = project.rows(
        "select before_image.name as before, after_image.name as after, changed_columns "
        f"from people_changelog where business_date = date'{D3}'"
    )
    assert changelog == [{"before": "blob", "after": "Bob", "changed_columns": ["name"]}]
    # Tags' owner is sensitive: its own state and history, d's new weight no change there.
    owners = project.rows(
        "select cast(business_date as string) as d, operation, owner from tags_sensitive_history"
    )
    assert sorted((r["d"], r["operation"], r["owner"] or "") for r in owners) == [
        (D1, "I", ""), (D1, "I", ""), (D1, "I", ""),
        (D2, "D", ""), (D2, "D", ""), (D2, "D", ""), (D2, "I", "o1"),
        (D3, "I", "o2"),
    ]  # fmt: skip
    owners_sql = (
        "select t.code, s.owner from tags_current t join tags_sensitive_current s "
        "using (keyhash) order by 1"
    )
    owned = [{"code": "d", "owner": "o1"}, {"code": "e", "owner": "o2"}]
    assert project.rows(owners_sql) == owned
    # rows_in, rejects, I, U, D, X, N, status: each member counted from its own events.
    assert _counts(project, D3) == {
        "folks": (1, 0, 0, 1, 0, 1, 0, "success"),
        "people": (1, 0, 0, 1, 0, 1, 0, "success"),
        "tags": (6, 0, 1, 1, 0, 0, 0, "success"),
    }
    watermarks = project.rows(
        "select table_name, event_sequence.source_lsn as lsn from log_state "
        "where operation = 'W' order by table_name"
    )
    assert [(w["table_name"], w["lsn"]) for w in watermarks] == [
        ("folks", 4), ("people", 7), ("tags", 9),
    ]  # fmt: skip

    # A rerun of one member reads its events against its own date before; the other's
    # rows and dates stay as they are.
    code, out = _run(project, capsys, "run", "--date", D3, "--select", "tags")
    assert code == 0, out[-3000:]
    assert _current(project, "tags", "code, weight, operation") == {
        ("d", 4.5, "U"),
        ("e", 5.0, "I"),
    }
    assert _current(project, "people", "id, name") == {(0, "Alice"), (1, "Bob")}
    assert project.rows(owners_sql) == owned
    assert _query(project, capsys, "select code from tags_current order by code", D1) == [
        ["a"], ["b"], ["c"],
    ]  # fmt: skip


def test_a_group_of_delta_extracts_alike(project: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Delta extracts in one group, members alike read as one: X, rejects, refusals per table.

    Three shards of an orders table, each in a folder of its own (one named with a space
    and a plus, which Spark writes escaped), and two stock tables whose files share a
    folder. Members whose configs differ only in names, places and limits are read, cast
    and hashed by one plan, and every row still goes to its own table: a key a date does
    not supply is kept (X) from the table's own previous rows, its rejects, counts and
    refusals are its own.
    """
    orders = [
        {"name": "order_id", "type": "bigint", "key": True},
        {"name": "amount", "type": "decimal(10,2)"},
        {"name": "placed", "type": "date"},
    ]
    stock = [{"name": "item", "type": "int", "key": True}, {"name": "qty", "type": "int"}]
    sources = {
        "orders_eu": "landing/eu shard+1/{business_date}",
        "orders_us": "landing/orders_us/{business_date}",
        "orders_ap": "landing/orders_ap/{business_date}",
        "stock_a": "landing/stock/{business_date}/a.csv",
        "stock_b": "landing/stock/{business_date}/b.csv",
    }
    configs = {
        name: {
            "name": name,
            "extract_type": "delta",
            "group": "shards",
            "source": source,
            "columns": orders if name.startswith("orders") else stock,
            # A limit is not part of the stage's plan: orders_us is still read with the others.
            **({"max_reject_fraction": 0.5} if name == "orders_us" else {}),
        }
        for name, source in sources.items()
    }
    _configure(project, configs)
    order_header = [c["name"] for c in orders]
    extracts = {
        D1: {
            "orders_eu": [[1, "1.00", D1], [2, "2.00", D1]],
            "orders_us": [[1, "5.00", D1], [2, "bad", D1], [3, "7.00", D1]],
            "orders_ap": [[9, "9.00", D1]],
            "stock_a": [[1, 10], [2, 20]],
            "stock_b": [[1, 100]],
        },
        D2: {
            "orders_eu": [[1, "1.50", D1], [3, "3.00", D2]],
            "orders_ap": [[9, "9.00", D1]],
            "stock_a": [[1, 10], [2, 21]],
            "stock_b": [[1, 100], [2, 200]],
        },
    }
    for date, tables in extracts.items():
        for name, rows in tables.items():
            place = sources[name].format(business_date=date)
            file = place if place.endswith(".csv") else f"{place}/part.csv"
            project.write_csv(
                file, order_header if name.startswith("orders") else ["item", "qty"], rows
            )
    # orders_us's second extract has another header: it alone is refused.
    project.write_csv(f"landing/orders_us/{D2}/part.csv", ["order_id", "amount", "when"], [])

    # A group's members share its lock: a run of one member is refused while another
    # process holds the group; once that process is gone, the next run clears its lock.
    warehouse = project.spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    lock = Path(warehouse) / LOCK_FOLDER / GROUP_FOLDER / "shards.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(["sleep", "120"])
    try:
        held = {"host": socket.gethostname(), "pid": holder.pid}
        lock.write_text(json.dumps({**held, "process_start": _process_start(holder.pid)}))
        code, out = _run(project, capsys, "run", "--date", D1, "--select", "stock_a")
        assert (
            code == 2
            and f"group 'shards' is being processed by another run (pid {holder.pid}" in out
        )
    finally:
        holder.kill()
        holder.wait()
    assert not project.rows("show tables like 'shards_state'")

    code, out = _run(project, capsys, "run", "--date", D1)
    assert code == 0, out[-3000:]
    assert "cleared the lock of group 'shards' left by a run that ended" in out
    assert not lock.exists()
    assert _counts(project, D1) == {
        "orders_ap": (1, 0, 1, 0, 0, 0, 0, "success"),
        "orders_eu": (2, 0, 2, 0, 0, 0, 0, "success"),
        "orders_us": (3, 1, 2, 0, 0, 0, 0, "warn"),
        "stock_a": (2, 0, 2, 0, 0, 0, 0, "success"),
        "stock_b": (1, 0, 1, 0, 0, 0, 0, "success"),
    }
    # One branch a set of members alike: two, where each member's own made five.
    views = {r["viewName"] for r in project.rows("show views")}
    assert {"hashcdc_group_member_shards_0", "hashcdc_group_member_shards_1"} <= views
    assert "hashcdc_group_member_shards_2" not in views
    [rejected] = project.rows("select line_number, raw_values, source_file from orders_us_rejects")
    assert (rejected["line_number"], rejected["raw_values"]["amount"]) == (3, "bad")
    assert rejected["source_file"].endswith(f"orders_us/{D1}/part.csv")

    code, out = _run(project, capsys, "run", "--date", D2)
    assert code != 0
    assert "table 'orders_us'" in out and "when" in out, out[-3000:]
    # Each table's keys not supplied are its own X: its previous rows less the date's keys.
    assert _counts(project, D2) == {
        "orders_ap": (1, 0, 0, 0, 0, 0, 1, "success"),
        "orders_eu": (2, 0, 1, 1, 0, 1, 0, "success"),
        "stock_a": (2, 0, 0, 1, 0, 0, 1, "success"),
        "stock_b": (2, 0, 1, 0, 0, 0, 1, "success"),
    }
    assert _current(project, "orders_eu", "order_id, amount, operation") == {
        (1, Decimal("1.50"), "U"), (2, Decimal("2.00"), "X"), (3, Decimal("3.00"), "I"),
    }  # fmt: skip
    history = project.rows(
        f"select order_id, operation from orders_eu_history where business_date = '{D2}'"
    )
    assert sorted((r["order_id"], r["operation"]) for r in history) == [(1, "U"), (3, "I")]
    assert _current(project, "orders_us", "order_id, amount") == {
        (1, Decimal("5.00")), (3, Decimal("7.00")),
    }  # fmt: skip
    assert _current(project, "orders_ap", "order_id") == {(9,)}
    assert _current(project, "stock_a", "item, qty") == {(1, 10), (2, 21)}
    assert _current(project, "stock_b", "item, qty") == {(1, 100), (2, 200)}
