"""Bad input stops the run with a message naming table, file, row and column.

In every case the previous state stays as it was.
"""

from __future__ import annotations

from typing import Any

CONFIG = {
    "name": "payments",
    "extract_type": "full",
    "source": {"path": "landing/payments/{business_date}/payments.csv", "format": "csv"},
    "columns": [
        {"name": "id", "type": "int", "key": True},
        {"name": "amount", "type": "decimal(8,2)"},
        {"name": "paid_on", "type": "date"},
        {"name": "paid_at", "type": "timestamp", "format": "dd/MM/yyyy HH:mm"},
    ],
}
GOOD = "id,amount,paid_on,paid_at\n1,1.00,2024-01-01,01/01/2024 10:00\n2,2.00,2024-01-01,\n"


def state_rows(project: Any) -> list[str]:
    return sorted(map(repr, project.rows("select * from payments_state")))


def first_day(project: Any) -> list[str]:
    project.add_table(CONFIG)
    project.write_text("landing/payments/2024-01-01/payments.csv", GOOD)
    outcome = project.build("2024-01-01", "payments")
    assert outcome.success, outcome.text
    return state_rows(project)


def test_values_that_do_not_cast_name_table_file_row_and_column(project: Any) -> None:
    before = first_day(project)
    path = project.write_text(
        "landing/payments/2024-01-02/payments.csv",
        "id,amount,paid_on,paid_at\n"
        "1,1.00,2024-01-01,01/01/2024 10:00\n"
        "2,two,2024-01-01,\n"
        "3,3.00,2024-02-30,2024-01-03T10:00\n"
        "4,4.00,,\n",
    )
    outcome = project.build("2024-01-02", "payments")
    assert not outcome.success
    message = outcome.text
    assert "table 'payments', business date 2024-01-02: 2 row(s)" in message
    assert f"{path.as_uri().replace('file:///', 'file:/')} row 2 (line 3)" in message
    assert "column 'amount' (decimal(8,2)): value 'two' does not cast" in message
    assert "row 3 (line 4)" in message
    assert "column 'paid_on' (date): value '2024-02-30' does not cast" in message
    assert (
        "column 'paid_at' (timestamp, format 'dd/MM/yyyy HH:mm'): value '2024-01-03T10:00'"
        in message
    )
    assert "Traceback" not in message
    assert outcome.statuses.get("payments_state") == "skipped"
    assert state_rows(project) == before


def test_empty_keys_and_malformed_rows_are_reported(project: Any) -> None:
    project.add_table(
        {
            **CONFIG,
            "name": "payments_shape",
            "source": {"path": "landing/payments_shape/{business_date}.csv"},
        }
    )
    project.write_text(
        "landing/payments_shape/2024-01-01.csv",
        "id,amount,paid_on,paid_at\n,1.00,2024-01-01,\n2,2.00\n3,3.00,2024-01-01,,extra\n",
    )
    outcome = project.build("2024-01-01", "payments_shape")
    assert not outcome.success
    assert "3 row(s)" in outcome.text
    assert "row 1 (line 2): key column 'id' is empty" in outcome.text
    assert "row 2 (line 3): malformed row: wrong number of fields" in outcome.text
    assert "row 3 (line 4): malformed row" in outcome.text


def test_missing_extract_names_the_expected_path(project: Any) -> None:
    before = first_day(project)
    outcome = project.build("2024-01-09", "payments")
    assert not outcome.success
    assert "table 'payments': no extract for business date 2024-01-09" in outcome.text
    assert "landing/payments/2024-01-09/payments.csv" in outcome.text
    assert "source.path in tables/payments.yml" in outcome.text
    assert state_rows(project) == before


def test_missing_business_date_is_a_clear_error(project: Any) -> None:
    project.add_table(CONFIG)
    outcome = project.dbt("build", "--select", "payments_state")
    assert not outcome.success
    assert "business_date is not set" in outcome.text


def test_duplicate_keys_stop_the_run_with_examples(project: Any) -> None:
    before = first_day(project)
    project.write_text(
        "landing/payments/2024-01-02/payments.csv",
        "id,amount,paid_on,paid_at\n1,1.00,2024-01-01,\n2,2.00,,\n1,9.99,,\n2,2.00,,\n3,3.00,,\n",
    )
    outcome = project.build("2024-01-02", "payments")
    assert not outcome.success
    assert (
        "table 'payments', business date 2024-01-02: 2 key(s) occur more than once" in outcome.text
    )
    assert "id=1: 2 rows (in file:" in outcome.text
    assert "id=2: 2 rows" in outcome.text
    assert outcome.statuses.get("payments_state") == "skipped"
    assert state_rows(project) == before


def test_csv_with_bom_crlf_quoted_line_breaks_and_blank_lines(project: Any) -> None:
    config = {
        "name": "notes",
        "extract_type": "full",
        "source": {
            "path": "landing/notes/{business_date}.csv",
            "csv": {"multiline": True},
        },
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "body", "type": "string"},
        ],
    }
    project.add_table(config)
    project.write_text(
        "landing/notes/2024-01-01.csv",
        '\ufeffid,body\r\n1,"two\nlines"\r\n2,"a,""quoted"" comma"\r\n3,""\r\n4,\r\n\r\n\r\n',
    )
    outcome = project.build("2024-01-01", "notes")
    assert outcome.success, outcome.text
    rows = {r["id"]: r["body"] for r in project.rows("select id, body from notes_current")}
    assert rows == {1: "two\nlines", 2: 'a,"quoted" comma', 3: "", 4: None}


def test_quoted_line_breaks_without_multiline_are_reported(project: Any) -> None:
    project.add_table(
        {
            "name": "notes_single",
            "extract_type": "full",
            "source": {"path": "landing/notes_single/{business_date}.csv"},
            "columns": [
                {"name": "id", "type": "int", "key": True},
                {"name": "body", "type": "string"},
            ],
        }
    )
    project.write_text("landing/notes_single/2024-01-01.csv", 'id,body\n1,"two\nlines"\n2,ok\n')
    outcome = project.build("2024-01-01", "notes_single")
    assert not outcome.success
    assert "need source.csv.multiline: true" in outcome.text


def test_a_truncated_full_extract_cannot_wipe_the_table(project: Any) -> None:
    from hashcdc.cli import main

    config = {
        **CONFIG,
        "name": "payments_guard",
        "source": {"path": "landing/payments_guard/{business_date}.csv"},
    }
    project.add_table(config)
    project.write_text(
        "landing/payments_guard/2024-01-01.csv",
        "id,amount,paid_on,paid_at\n1,1,,\n2,2,,\n3,3,,\n4,4,,\n",
    )
    assert project.build("2024-01-01", "payments_guard").success
    before = sorted(map(repr, project.rows("select * from payments_guard_state")))
    project.write_text(
        "landing/payments_guard/2024-01-02.csv", "id,amount,paid_on,paid_at\n1,1,,\n"
    )
    outcome = project.build("2024-01-02", "payments_guard")
    assert not outcome.success
    assert "would delete 3 of 4 current rows (75.0%), more than 50.0%" in outcome.text
    assert "hashcdc_allow_mass_delete: true" in outcome.text
    assert sorted(map(repr, project.rows("select * from payments_guard_state"))) == before

    args = ["--project-dir", str(project.root), "run", "--date", "2024-01-02"]
    assert main([*args, "--select", "payments_guard", "--allow-mass-delete"]) == 0
    operations = project.rows(
        "select operation, count(*) as n from payments_guard_history "
        "where business_date = date'2024-01-02' group by operation"
    )
    assert {r["operation"]: r["n"] for r in operations} == {"D": 3}


def test_an_empty_full_extract_is_refused_and_an_empty_delta_changes_nothing(
    project: Any,
) -> None:
    before = first_day(project)
    project.write_text("landing/payments/2024-01-02/payments.csv", "id,amount,paid_on,paid_at\n")
    outcome = project.build("2024-01-02", "payments")
    assert not outcome.success
    assert "would delete 2 of 2 current rows (100.0%)" in outcome.text
    assert "SparkException" not in outcome.text and "\tat " not in outcome.text  # one message
    assert state_rows(project) == before

    project.add_table(
        {
            **CONFIG,
            "name": "payments_delta",
            "extract_type": "delta",
            "source": {"path": "landing/payments_delta/{business_date}.csv"},
        }
    )
    project.write_text("landing/payments_delta/2024-01-01.csv", GOOD)
    assert project.build("2024-01-01", "payments_delta").success
    project.write_text("landing/payments_delta/2024-01-02.csv", "")
    assert project.build("2024-01-02", "payments_delta").success
    current = project.rows("select id, operation from payments_delta_current order by id")
    assert [(r["id"], r["operation"]) for r in current] == [(1, "X"), (2, "X")]


def test_a_header_that_differs_from_the_config_is_refused(project: Any) -> None:
    before = first_day(project)
    project.write_text(
        "landing/payments/2024-01-02/payments.csv",
        "id,paid_on,amount,paid_at\n1,2024-01-01,1.00,\n",
    )
    outcome = project.build("2024-01-02", "payments")
    assert not outcome.success
    assert "table 'payments': the extract of 2024-01-02 has other columns than" in outcome.text
    assert "columns in another order: id, paid_on, amount, paid_at" in outcome.text
    assert state_rows(project) == before

    project.write_text(
        "landing/payments/2024-01-02/payments.csv", "\ufeffID,amount,paid_at,note\n1,1.00,,x\n"
    )
    outcome = project.build("2024-01-02", "payments")
    assert not outcome.success
    assert "missing column(s) paid_on; extra column(s) note" in outcome.text
    assert outcome.statuses.get("payments_state") == "skipped"
    assert state_rows(project) == before


def test_a_spark_written_extract_edited_by_hand_is_named(project: Any) -> None:
    name = "edited"
    project.add_table(
        {
            "name": name,
            "extract_type": "full",
            "source": {"path": f"landing/{name}/{{business_date}}"},
            "columns": [{"name": "id", "type": "int", "key": True}],
        }
    )
    folder = project.root / f"landing/{name}/2024-01-01"
    project.spark.createDataFrame([(1,)], "id int").coalesce(1).write.csv(str(folder), header=True)
    part = next(folder.glob("part-*.csv"))
    part.write_text("id\n2\n")  # the .crc file Spark wrote beside it no longer matches
    outcome = project.build("2024-01-01", name)
    assert not outcome.success
    assert f"{part.name} no longer matches its checksum file (.{part.name}.crc" in outcome.text
    assert "Delete the .crc file if the change is meant" in outcome.text


def test_files_that_are_not_text_and_bytes_that_are_not_utf8(project: Any, capfd: Any) -> None:
    """Issue 25: a gzip file named .csv, a binary file, a row with invalid UTF-8 bytes."""
    import gzip

    from hashcdc.cli import main

    before = first_day(project)
    capfd.readouterr()
    args = ["--project-dir", str(project.root), "run", "--date", "2024-01-02"]
    extract = project.write_text("landing/payments/2024-01-02/payments.csv", "")
    extract.write_bytes(gzip.compress(GOOD.encode()))
    assert main([*args, "--select", "payments"]) == 1
    out, err = capfd.readouterr()
    assert f"{extract.name} is a gzip file, not UTF-8 text: name it with .gz at the end" in out
    assert "Traceback" not in out + err and "KeyError" not in out + err
    extract.write_bytes(b"\x00\x01\x02binary\x00" * 64)
    assert main([*args, "--select", "payments"]) == 1
    out, err = capfd.readouterr()
    assert "is not UTF-8 text (it holds NUL bytes: a binary file?)" in out
    assert "Traceback" not in out + err
    assert state_rows(project) == before

    # Bytes that are not UTF-8 in one row: that row is rejected, naming file, row, column.
    project.add_table(
        {
            **CONFIG,
            "max_reject_fraction": 0.5,
            "columns": [*CONFIG["columns"], {"name": "note", "type": "string"}],
        }
    )
    header = b"id,amount,paid_on,paid_at,note\n"
    extract.write_bytes(
        header
        + b"1,1.00,2024-01-01,01/01/2024 10:00,ok\n"
        + b"2,2.00,2024-01-01,,x\xff\xfe\n"
        + b"3,3.00,2024-01-01,,caf\xc3\xa9\n"
    )
    assert main([*args, "--select", "payments"]) == 0
    capfd.readouterr()
    rejects = project.rows("select row_number, reasons from payments_rejects")
    assert [(r["row_number"], len(r["reasons"])) for r in rejects] == [(2, 1)]
    assert rejects[0]["reasons"][0].startswith("column 'note' (string): value 'x")
    assert (
        "holds bytes that are not valid text in the extract's encoding"
        in (rejects[0]["reasons"][0])
    )
    notes = project.rows("select id, note from payments_current order by id")
    assert [(r["id"], r["note"]) for r in notes] == [(1, "ok"), (2, None), (3, "café")]
