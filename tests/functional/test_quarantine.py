"""Rejected rows go to ``<table>_rejects``; the rest of the extract is processed.

Every test runs the real pipeline and checks that a rejected row never deletes its key
and that the previous state is intact when the run stops.
"""

from __future__ import annotations

from typing import Any

COLUMNS = [
    {"name": "id", "type": "int", "key": True},
    {"name": "amount", "type": "decimal(8,2)"},
    {"name": "updated_at", "type": "timestamp"},
]
HEADER = "id,amount,updated_at\n"
DAY_1 = HEADER + "1,1.00,2024-01-01 10:00:00\n2,2.00,2024-01-01 10:00:00\n"


def add_table(project: Any, name: str, **options: Any) -> None:
    project.add_table(
        {
            "name": name,
            "extract_type": "full",
            "source": {"path": f"landing/{name}/{{business_date}}.csv"},
            "columns": COLUMNS,
            **options,
        }
    )
    project.write_text(f"landing/{name}/2024-01-01.csv", DAY_1)
    outcome = project.build("2024-01-01", name)
    assert outcome.success, outcome.text


def current(project: Any, name: str) -> dict[int, tuple[str, str]]:
    rows = project.rows(
        f"select id, cast(amount as string) as amount, operation from {name}_current"
    )
    return {row["id"]: (row["amount"], row["operation"]) for row in rows}


def test_rejected_rows_are_quarantined_and_their_keys_kept(project: Any) -> None:
    add_table(project, "quarantined", max_reject_fraction=0.5)
    path = project.write_text(
        "landing/quarantined/2024-01-02.csv",
        HEADER
        + "1,1.50,2024-01-02 10:00:00\n"
        + "2,two,2024-01-02 10:00:00\n"
        + "3,3.00,2024-01-02 10:00:00\n"
        + "4,4.00\n",
    )
    outcome = project.build("2024-01-02", "quarantined")
    assert outcome.success, outcome.text
    assert [v for k, v in outcome.statuses.items() if "no_rejects" in k] == ["warn"]
    # Key 2's row was rejected: it keeps its previous state instead of being deleted.
    assert current(project, "quarantined") == {
        1: ("1.50", "U"),
        2: ("2.00", "X"),
        3: ("3.00", "I"),
    }
    history = project.rows(
        "select id, operation from quarantined_history where business_date = date'2024-01-02'"
    )
    assert sorted((r["id"], r["operation"]) for r in history) == [(1, "U"), (3, "I")]
    rejects = project.rows(
        "select * from quarantined_rejects where business_date = date'2024-01-02' "
        "order by row_number"
    )
    assert [(r["row_number"], r["line_number"]) for r in rejects] == [(2, 3), (4, 5)]
    assert rejects[0]["source_file"].endswith(str(path))
    assert rejects[0]["reasons"] == ["column 'amount' (decimal(8,2)): value 'two' does not cast"]
    assert rejects[0]["raw_values"]["amount"] == "two"
    assert rejects[1]["reasons"][0].startswith("malformed row: wrong number of fields")
    assert rejects[1]["raw_line"] == "4,4.00"

    # The corrected extract, re-run: the date's rejects are gone, key 2 is updated.
    project.write_text(
        "landing/quarantined/2024-01-02.csv",
        HEADER + "1,1.50,x\n2,2.50,x\n3,3.00,x\n".replace(",x", ",2024-01-02 10:00:00"),
    )
    assert project.build("2024-01-02", "quarantined").success
    assert project.rows("select * from quarantined_rejects") == []
    assert current(project, "quarantined")[2] == ("2.50", "U")

    # A date without rejects whose table holds none of it commits nothing to the rejects.
    versions = project.rows("describe history quarantined_rejects")
    project.write_text(
        "landing/quarantined/2024-01-03.csv",
        HEADER + "1,1.50,x\n2,2.50,x\n3,3.25,x\n".replace(",x", ",2024-01-03 09:00:00"),
    )
    assert project.build("2024-01-03", "quarantined").success
    assert project.rows("describe history quarantined_rejects") == versions
    assert current(project, "quarantined")[3] == ("3.25", "U")


def test_rejects_above_the_limit_stop_the_run_before_anything_is_written(project: Any) -> None:
    add_table(project, "over_limit", max_rejects=1, max_reject_fraction=1)
    before = project.rows("select * from over_limit_state")
    project.write_text("landing/over_limit/2024-01-02.csv", HEADER + "1,x,\n2,y,\n3,3.00,\n")
    outcome = project.build("2024-01-02", "over_limit")
    assert not outcome.success
    assert "2 row(s) of the extract cannot be loaded (66.7% of 3), more than max_rejects (1)" in (
        outcome.text
    )
    assert "row 1 (line 2): column 'amount' (decimal(8,2)): value 'x' does not cast" in (
        outcome.text
    )
    assert outcome.statuses.get("over_limit_state") == "skipped"
    assert project.rows("select * from over_limit_state") == before


def test_duplicate_keys_keep_the_last_row_and_quarantine_the_others(project: Any) -> None:
    add_table(project, "deduplicated", duplicates_keep_last_by="updated_at", max_rejects=10)
    project.write_text(
        "landing/deduplicated/2024-01-02.csv",
        HEADER
        + "1,1.10,2024-01-02 09:00:00\n"
        + "1,1.20,2024-01-02 11:00:00\n"
        + "1,1.15,2024-01-02 10:00:00\n"
        + "2,2.10,2024-01-02 09:00:00\n"
        + "2,2.20,2024-01-02 09:00:00\n",
    )
    outcome = project.build("2024-01-02", "deduplicated")
    assert outcome.success, outcome.text
    # Key 1: the latest row wins. Key 2: two rows share the latest time, none is taken.
    assert current(project, "deduplicated") == {1: ("1.20", "U"), 2: ("2.00", "X")}
    rejects = project.rows(
        "select row_number, reasons from deduplicated_rejects order by row_number"
    )
    assert [r["row_number"] for r in rejects] == [1, 3, 4, 5]
    assert rejects[0]["reasons"] == ["duplicate key: a row with a later 'updated_at' wins"]
    assert rejects[2]["reasons"] == [
        "duplicate key: several rows share the latest 'updated_at'; none is taken"
    ]
