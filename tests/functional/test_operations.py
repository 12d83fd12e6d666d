"""Operating many tables: the run summary, the audit table, status, pause and resume,
retention, the pre-run check, drop, the report and dbt docs (in a real Chromium)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from browser import rendered_dom, screenshot

from hashcdc.cli import main
from hashcdc.state.versions import applied_versions

D1, D2, D3, D4, D5, D6 = (f"2024-03-0{day}" for day in range(1, 7))
ORDERS = "ops_orders"
ITEMS = "ops_items"


def orders_config(**extra: Any) -> dict[str, Any]:
    return {
        "name": ORDERS,
        "description": "Orders of the operations test.",
        "extract_type": "full",
        "source": {"path": f"landing/{ORDERS}/{{business_date}}/orders.csv"},
        "max_reject_fraction": 0.5,
        "history_retention_days": 1,
        "rejects_retention_days": 1,
        "columns": [
            {"name": "id", "type": "int", "key": True, "description": "The order's number."},
            {"name": "amount", "type": "decimal(10,2)", "description": "What it costs."},
        ],
        **extra,
    }


ITEMS_CONFIG = {
    "name": ITEMS,
    "extract_type": "delta",
    "source": {"path": f"landing/{ITEMS}/{{business_date}}/items.csv"},
    "columns": [{"name": "sku", "type": "string", "key": True}, {"name": "qty", "type": "int"}],
}


def audit(project: Any, table: str) -> dict[str, dict[str, Any]]:
    """The latest audit row of each business date of a table."""
    rows = project.rows(f"select * from cdc_runs where table_name = '{table}' order by ended_at")
    return {str(row["business_date"]): row for row in rows}


def counts(row: dict[str, Any]) -> tuple[int, ...]:
    return tuple(
        row[c] for c in ("rows_in", "rejects", "inserted", "updated", "deleted", "unchanged")
    )


def partitions(project: Any, relation: str) -> list[str]:
    """The business dates a table holds rows of (a Delta history, a parquet table)."""
    found = project.rows(f"select distinct cast(business_date as string) as d from {relation}")
    return sorted(r["d"] for r in found)


def test_a_week_of_operations(project: Any, capsys: Any, monkeypatch: Any) -> None:
    args = ["--project-dir", str(project.root)]
    # Two dbt threads: the tables of a date run side by side, each node in a Spark session
    # of its own (a state's pre-hook sets the business date its commit records, its
    # post-hook resets it: in one shared session the other table's commit would take it).
    monkeypatch.setenv("HASHCDC_THREADS", "2")
    assert project.spark  # the shared session, started the way every other test starts it
    project.add_table(orders_config())
    project.add_table(ITEMS_CONFIG)
    orders = {
        D1: [(1, "1.00"), (2, "2.00"), (3, "3.00")],
        D2: [(1, "1.50"), (2, "2.00"), (4, "4.00"), (5, "oops")],
        D3: [(1, "1.50"), (2, "2.00"), (4, "4.00")],
        D4: [(2, "2.00"), (4, "4.00"), (6, "6.00")],
    }
    for day, rows in orders.items():
        project.write_csv(f"landing/{ORDERS}/{day}/orders.csv", ["id", "amount"], rows)
    for day in (D1, D2, D3, D4):
        project.write_csv(f"landing/{ITEMS}/{day}/items.csv", ["sku", "qty"], [(day, 1)])

    # The check before a run: what is there, and what is not.
    assert main([*args, "check", "--date", D1, D5]) == 1
    out, err = capsys.readouterr()
    assert f"{D1} table '{ORDERS}': 1 file(s), columns match" in out
    assert "generated models are current" in out
    assert f"table '{ORDERS}': no extract for business date {D5}" in err

    # Two dates in one run: a header and a summary per date.
    assert main([*args, "run", "--date", D2, D1]) == 0
    out = capsys.readouterr().out
    assert out.index(f"business date {D1}") < out.index(f"business date {D2}")
    log = re.search(r"full log: (\S+)", out).group(1)
    assert (project.root / log).exists() and "Running with dbt" in (project.root / log).read_text()
    day2_line = next(line for line in out.splitlines() if ORDERS in line and "warn" in line)
    assert re.findall(r"[\d,.]+", day2_line)[:8] == ["4", "1", "1", "1", "1", "0", "1", "3"]
    runs = audit(project, ORDERS)
    assert counts(runs[D1]) == (3, 0, 3, 0, 0, 0)
    # Day 2: 1 updated, 2 unchanged, 3 deleted, 4 inserted, 5 rejected (no_rejects warns).
    assert counts(runs[D2]) == (4, 1, 1, 1, 1, 1)
    assert runs[D2]["status"] == "warn"
    assert (runs[D2]["state_rows_before"], runs[D2]["state_rows_after"]) == (3, 3)
    assert set(runs[D2]["model_seconds"]) >= {f"stg_{ORDERS}", f"{ORDERS}_state"}
    assert runs[D2]["started_at"] <= runs[D2]["ended_at"]

    # Pause the orders: every run skips them and says so; naming them is refused.
    project.add_table(orders_config(enabled=False))
    assert main([*args, "run", "--date", D3, "--select", ORDERS]) == 2
    assert "paused (enabled: false" in capsys.readouterr().err
    assert main([*args, "run", "--date", D3]) == 0
    assert f"paused, skipped: {ORDERS}" in capsys.readouterr().out
    assert project.build(D3).success  # plain dbt skips them too
    assert D3 not in audit(project, ORDERS) and D3 in audit(project, ITEMS)

    # Resumed, the next date is compared with the last state (day 2).
    project.add_table(orders_config())
    assert main([*args, "run", "--date", D4]) == 0
    capsys.readouterr()
    day4 = audit(project, ORDERS)[D4]
    assert counts(day4) == (3, 0, 1, 0, 1, 2) and day4["state_rows_before"] == 3
    # Retention of one day: history and rejects before day 3 are gone.
    assert partitions(project, f"{ORDERS}_history") == [D4]
    assert all(d >= D3 for d in partitions(project, f"{ORDERS}_rejects"))
    assert partitions(project, f"{ITEMS}_history") == [D1, D2, D3, D4]

    # A failed date is recorded too, with its message; a table that fails stops there,
    # and the other tables go on with their later dates.
    stock = [(2, "2.00"), (4, "4.00"), (6, "6.00"), (7, "7.00")]
    project.write_csv(f"landing/{ORDERS}/{D5}/orders.csv", ["id", "amount"], stock)
    project.write_csv(
        f"landing/{ORDERS}/{D6}/orders.csv", ["id", "amount"], [(2, "2.50")] + stock[1:]
    )
    project.write_csv(f"landing/{ITEMS}/{D6}/items.csv", ["sku", "qty"], [(D6, 1)])
    assert main([*args, "run", "--date", D5, D6]) == 1
    out, err = capsys.readouterr()
    assert f"business date {D6}" in out
    assert f"table {ITEMS} stopped at {D5}" in err and f"not run for: {D6}" in err
    assert ORDERS not in err and "fix the cause" in err
    failed = audit(project, ITEMS)[D5]
    assert failed["status"] == "error" and "no extract" in failed["error_message"]
    assert failed["inserted"] is None
    assert D6 not in audit(project, ITEMS)
    orders_runs = audit(project, ORDERS)
    assert orders_runs[D5]["status"] == orders_runs[D6]["status"] == "success"
    assert counts(orders_runs[D5]) == (4, 0, 1, 0, 0, 3)
    assert counts(orders_runs[D6]) == (4, 0, 0, 1, 0, 3)
    for table, dates in ((ORDERS, [D1, D2, D4, D5, D6]), (ITEMS, [D1, D2, D3, D4])):
        applied = applied_versions(project.spark, f"{project.schema}.{table}_state")
        assert [version.business_date for version in applied] == dates, table

    assert main([*args, "status"]) == 0
    status = capsys.readouterr().out
    lag = (dt.date.today() - dt.date.fromisoformat(D6)).days
    orders_line = next(line for line in status.splitlines() if ORDERS in line)
    assert "full" in orders_line and D6 in orders_line and f"{lag} day(s)" in orders_line
    items_line = next(line for line in status.splitlines() if ITEMS in line)
    assert f"error ({D5})" in items_line and D4 in items_line

    # The report: four charts drawn by plotly in a real browser, no network needed.
    report = project.root / "target" / "report.html"
    assert main([*args, "report", "--out", str(report)]) == 0
    capsys.readouterr()
    dom = rendered_dom(report.as_uri())
    for chart in ("chart-operations", "chart-rejects", "chart-durations", "chart-lag"):
        drawn = re.search(rf'id="{chart}".*?class="main-svg"(.*?)</svg>', dom, re.S)
        assert drawn, f"{chart} was not drawn"
    assert dom.count('class="point"') >= 8  # bars of the operations chart
    assert "https://" not in report.read_text().split("<script")[0]
    screenshot(report.as_uri(), "report.png")

    # dbt docs as one page: a table's lineage and its column descriptions are shown.
    assert main([*args, "docs"]) == 0
    capsys.readouterr()
    page = (project.root / "target" / "static_index.html").as_uri()
    model = f"{page}#!/model/model.hashcdc.{ORDERS}_current"
    dom = rendered_dom(model)
    assert "The order&#39;s number." in dom or "The order's number." in dom
    assert f"{ORDERS}_state" in dom  # what it depends on
    screenshot(model, "docs_model.png", height=1600)

    # Dropping a table removes its config, its models and (confirmed) its data.
    assert main([*args, "drop", ITEMS]) == 2  # not a terminal: no confirmation possible
    assert "--yes" in capsys.readouterr().err
    assert main([*args, "drop", ITEMS, "--yes"]) == 0
    assert not (project.root / "tables" / f"{ITEMS}.yml").exists()
    assert not list(project.root.glob(f"python_models/*{ITEMS}*"))
    assert not (project.root / "models" / ITEMS).exists()
    assert (project.root / "landing" / ITEMS).exists()  # the extracts are the source's
    assert not project.spark.catalog.tableExists(f"{ITEMS}_state")
    assert main([*args, "generate", "--check"]) == 0
