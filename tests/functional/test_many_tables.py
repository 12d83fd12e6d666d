"""A database of many small tables over two dates (issue 41: a 100-table date failed).

Ten tables here, two of them with a changelog (the suite's time; twenty until issue 65's
eleventh session); fifty (451 s) and a hundred (1,036 s) passed outside it
(docs/performance.md).

At a client, every table's second date stopped in its `no_rejects` test with Hive's
"Caught Hive MetaException attempting to get partition metadata by filter": the rejects
were a parquet table partitioned by `business_date`, and a filter on that date was sent
to the metastore, whose fallback path (JDO, taken whenever Hive's direct SQL fails) serves
no filter on a date column. The suite's session runs on that fallback path
(`hive.metastore.try.direct.sql` off, tests/conftest.py), so a date filter answered by
the metastore fails in every test; the tables of dated rows are Delta tables now, whose
dates are found from their own log.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import yaml

from hashcdc.cli import main
from hashcdc.codegen import generate
from hashcdc.config import load_table_configs
from hashcdc.state.versions import is_delta

TABLES = 10
ROWS = 8
D1, D2 = "2024-05-01", "2024-05-02"
COLUMNS = ["id", "name", "amount", "updated", "active"]


def name_of(number: int) -> str:
    return f"many_{number:03d}"


def config(number: int) -> dict[str, Any]:
    return {
        "name": name_of(number),
        "extract_type": "full",
        "source": {"path": f"landing/{name_of(number)}/{{business_date}}.csv"},
        "max_reject_fraction": 0.2,
        # Every fifth table keeps a changelog: another table of dated rows.
        "changelog": number % 5 == 0,
        "columns": [
            {"name": "id", "type": "bigint", "key": True},
            {"name": "name", "type": "string"},
            {"name": "amount", "type": "decimal(12,2)"},
            {"name": "updated", "type": "date"},
            {"name": "active", "type": "boolean"},
        ],
    }


def day_one(number: int) -> dict[int, list[Any]]:
    return {
        i: [i, f"Zoë {number}·{i}", Decimal(f"{number}.{i:02d}"), "2024-04-30", i % 2 == 0]
        for i in range(1, ROWS + 1)
    }


def day_two(number: int) -> dict[int, list[Any]]:
    """Day one with key 1 updated, key 2 deleted and key 100 inserted."""
    rows = day_one(number)
    rows[1] = [1, f"Zoë {number}·1 ✓", Decimal("7.50"), D2, False]
    del rows[2]
    rows[100] = [100, "new", Decimal("0.01"), D2, True]
    return rows


def test_ten_tables_run_two_dates_on_the_metastores_fallback_path(
    project: Any, monkeypatch: Any, capsys: Any
) -> None:
    # The client's project: many tables, one date after another, the tables side by side.
    monkeypatch.setenv("HASHCDC_THREADS", "2")
    assert project.spark.conf.get("spark.hadoop.hive.metastore.try.direct.sql") == "false"
    for number in range(TABLES):
        name = name_of(number)
        (project.root / "tables" / f"{name}.yml").write_text(
            yaml.safe_dump(config(number), sort_keys=False), encoding="utf-8"
        )
        project.write_csv(f"landing/{name}/{D1}.csv", COLUMNS, day_one(number).values())
        bad = [[99, "bad", "not a number", D2, True]]  # one rejected row a table on day two
        project.write_csv(f"landing/{name}/{D2}.csv", COLUMNS, [*day_two(number).values(), *bad])
    generate.write(project.root, load_table_configs(project.root / "tables"))

    code = main(["--project-dir", str(project.root), "run", "--date", D1, D2])
    output = capsys.readouterr()
    assert code == 0, output.out[-3000:]
    assert "MetaException" not in output.out + output.err

    names = [name_of(number) for number in range(TABLES)]
    changelogs = [name_of(number) for number in range(TABLES) if number % 5 == 0]
    for dated in [f"{names[0]}_rejects", f"{changelogs[0]}_changelog", f"{names[0]}_history"]:
        assert is_delta(project.spark, dated), dated

    def union(select: str, tables: list[str]) -> list[dict[str, Any]]:
        return project.rows(" union all ".join(select.format(t=t) for t in tables))

    current = union("select '{t}' as t, id, name, amount, updated, active from {t}_current", names)
    got: dict[str, set[tuple]] = {name: set() for name in names}
    for row in current:
        got[row.pop("t")].add(tuple(row.values()))
    for number, name in enumerate(names):
        expected = {
            (r[0], r[1], r[2], dt.date.fromisoformat(r[3]), r[4]) for r in day_two(number).values()
        }
        assert got[name] == expected, name

    changes = union(
        "select '{t}' as t, business_date, operation, count(*) as n from {t}_history "
        "group by business_date, operation",
        names,
    )
    by_table: dict[str, set[tuple]] = {name: set() for name in names}
    for row in changes:
        by_table[row["t"]].add((str(row["business_date"]), row["operation"], row["n"]))
    wanted = {(D1, "I", ROWS), (D2, "U", 1), (D2, "D", 1), (D2, "I", 1)}
    assert all(found == wanted for found in by_table.values()), by_table

    rejects = union(
        "select '{t}' as t, count(*) as n from {t}_rejects where business_date = date'" + D2 + "'",
        names,
    )
    assert {row["t"]: row["n"] for row in rejects} == dict.fromkeys(names, 1)
    images = union(
        "select '{t}' as t, count(*) as n from {t}_changelog where business_date = date'"
        + D2
        + "'",
        changelogs,
    )
    assert {row["t"]: row["n"] for row in images} == dict.fromkeys(changelogs, 3)

    audit = project.rows(
        "select status, count(*) as n from cdc_runs "
        f"where table_name in ({', '.join(repr(n) for n in names)}) group by status"
    )
    # Day two's rejected row makes its no_rejects test warn (severity warn).
    assert {row["status"]: row["n"] for row in audit} == {"success": TABLES, "warn": TABLES}
