"""Tables that change shape (docs/schema-evolution.md), through the real pipeline.

Each scenario runs four business dates while the table's config changes as a user would
change it: on the third date a column is added (with values), one is renamed and two are
widened (int to bigint, float to double); on the fourth a column is removed from the
source. Only real changes of data are updates: the exact U rows are checked on every date,
and a replay of all four dates with the final config rebuilds the same tables.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from feed_events import Event, create, delete, feed_config, json_lines, update

from hashcdc.cli import main
from hashcdc.state.versions import applied_versions

DATES = ["2024-03-01", "2024-03-02", "2024-03-03", "2024-03-04"]
ADDED, REMOVED = DATES[2], DATES[3]
# The config before the shape changes, then as the user edits it on the third and fourth date.
BEFORE = [
    {"name": "id", "type": "int", "key": True},
    {"name": "name", "type": "string"},
    {"name": "qty", "type": "int"},
    {"name": "price", "type": "float"},
    {"name": "old_code", "type": "string"},
]


def columns_on(business_date: str) -> list[dict[str, Any]]:
    """The columns of the config as the user has it on a business date."""
    columns = copy.deepcopy(BEFORE)
    if business_date >= ADDED:
        columns[2]["type"] = "bigint"  # a widening of an exact type needs no declaration
        columns[3] |= {"type": "double", "widened": {"from": "float", "since": ADDED}}
        columns[4] = {"name": "code", "type": "string", "renamed_from": "old_code"}
        columns.append({"name": "email", "type": "string", "added": ADDED})
    if business_date >= REMOVED:
        columns[1]["removed"] = REMOVED
    return columns


def header_on(business_date: str) -> list[str]:
    """The extract's columns on a business date: the source changes with the config."""
    header = ["id", "name", "qty", "price", "old_code"]
    if business_date >= ADDED:
        header = ["id", "name", "qty", "price", "code", "email"]
    if business_date >= REMOVED:
        header.remove("name")
    return header


# Rows per date as (id, name, qty, price, code, email); None where the extract lacks it.
ROWS = {
    DATES[0]: [
        (1, "ann", 1, 0.1, "A", None),
        (2, "bob", 2, 0.2, "B", None),
        (3, "cy", 3, 0.3, "C", None),
    ],
    # id 2's name changes.
    DATES[1]: [
        (1, "ann", 1, 0.1, "A", None),
        (2, "bo", 2, 0.2, "B", None),
        (3, "cy", 3, 0.3, "C", None),
    ],
    # The shape changes; only id 3 really changes (its name).
    DATES[2]: [
        (1, "ann", 1, 0.1, "A", "ann@x"),
        (2, "bo", 2, 0.2, "B", "bo@x"),
        (3, "cyd", 3, 0.3, "C", "cy@x"),
    ],
    # `name` is gone from the source; id 1's email and id 2's qty change; id 4 is new.
    DATES[3]: [
        (1, None, 1, 0.1, "A", "ann@y"),
        (2, None, 5_000_000_000, 0.2, "B", "bo@x"),
        (3, None, 3, 0.3, "C", "cy@x"),
        (4, None, 4, 0.4, "D", "d@x"),
    ],
}
EXPECTED_UPDATES = {DATES[0]: [], DATES[1]: [2], DATES[2]: [3], DATES[3]: [1, 2]}
EXPECTED_COUNTS = {
    DATES[0]: {"I": 3},
    DATES[1]: {"U": 1, "N": 2},
    DATES[2]: {"U": 1, "N": 2},
    DATES[3]: {"U": 2, "N": 1, "I": 1},
}


def cli(project: Any, *args: str) -> int:
    return main(["--project-dir", str(project.root), *args])


def full_config(name: str, business_date: str, extract_type: str = "full") -> dict[str, Any]:
    return {
        "name": name,
        "extract_type": extract_type,
        "changelog": True,
        "source": {"path": f"landing/{name}/{{business_date}}.csv"},
        "columns": columns_on(business_date),
    }


FIELDS = ["id", "name", "qty", "price", "code", "email"]


def source_values(business_date: str, row: tuple) -> dict[str, Any]:
    """A row as the source has it on a date: only the fields it carries, by their names."""
    values = dict(zip(FIELDS, row, strict=True))
    values["old_code"] = values["code"]
    return {column: values[column] for column in header_on(business_date)}


def write_extract(project: Any, name: str, business_date: str, rows: list[tuple]) -> None:
    header = header_on(business_date)
    values = [list(source_values(business_date, row).values()) for row in rows]
    project.write_csv(f"landing/{name}/{business_date}.csv", header, values)


def run_dates(
    project: Any,
    name: str,
    config: Any,
    deliver: Any,
    expected_updates: dict[str, list[int]],
    expected_counts: dict[str, dict[str, int]],
) -> None:
    """Run the four dates as a user would, editing the config before each; check each."""
    for business_date in DATES:
        project.add_table(config(name, business_date))
        deliver(project, name, business_date)
        assert cli(project, "run", "--date", business_date, "--select", name) == 0, business_date
        assert updated_ids(project, name, business_date) == expected_updates[business_date]
        assert counts(project, name, business_date) == expected_counts[business_date]


def assert_replay_rebuilds(project: Any, name: str, *relations: str) -> None:
    """Replaying every date with the final config gives the tables of the forward run."""
    forward = snapshot(project, name, *relations)
    assert cli(project, "replay", "--from", DATES[0], "--select", name) == 0
    replayed = snapshot(project, name, *relations)
    for relation, rows in forward.items():
        assert set(replayed[relation]) ^ set(rows) == set(), relation


def counts(project: Any, name: str, business_date: str) -> dict[str, int]:
    """The operation counts the date's commit recorded in the state's W row."""
    [applied] = [
        a
        for a in applied_versions(project.spark, f"{name}_state")
        if a.business_date == business_date
    ]
    [row] = project.rows(
        f"select operation_counts as c from {name}_state version as of {applied.version} "
        "where operation = 'W'"
    )
    return {op: n for op, n in row["c"].items() if op in ("I", "U", "D", "X", "N") and n}


def updated_ids(project: Any, name: str, business_date: str) -> list[int]:
    rows = project.rows(
        f"select id from {name}_history "
        f"where business_date = date'{business_date}' and operation = 'U'"
    )
    return sorted(r["id"] for r in rows)


def snapshot(project: Any, name: str, *relations: str) -> dict[str, list[tuple]]:
    """The rows of some of a table's relations, without hashcdc's bookkeeping dates."""
    tables = {}
    for relation in relations:
        frame = project.spark.table(f"{name}_{relation}").drop("seen_date")
        tables[relation] = sorted((tuple(map(str, r)) for r in frame.collect()), key=repr)
    return tables


def column_types(project: Any, relation: str) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in project.spark.table(relation).schema}


def test_a_full_table_changes_shape_without_spurious_updates(project: Any) -> None:
    name = "evolving_full"

    def deliver(project: Any, name: str, business_date: str) -> None:
        write_extract(project, name, business_date, ROWS[business_date])

    run_dates(project, name, full_config, deliver, EXPECTED_UPDATES, EXPECTED_COUNTS)

    # Every table follows the config: new and renamed columns, widened types, and the
    # removed column kept.
    for relation in ("state", "history", "current"):
        types = column_types(project, f"{name}_{relation}")
        assert types["qty"] == "bigint" and types["price"] == "double", relation
        assert types["email"] == "string" and "code" in types and "old_code" not in types
        assert "name" in types
    images = column_types(project, f"{name}_changelog")["after_image"]
    assert images == "struct<id:int,name:string,qty:bigint,price:double,code:string,email:string>"

    current = {r["id"]: r for r in project.rows(f"select * from {name}_current")}
    # The new column shows its value; the version's start date did not move for it.
    assert current[2]["email"] == "bo@x" and str(current[2]["eff_start_date"]) == DATES[3]
    assert current[3]["email"] == "cy@x" and str(current[3]["eff_start_date"]) == DATES[2]
    assert current[2]["qty"] == 5_000_000_000
    # The removed column is null for rows written since; old dates keep their values.
    assert current[4]["name"] is None and current[1]["name"] is None
    first = project.rows(
        f"select id, name, code, price from {name}_history where business_date = date'{DATES[0]}'"
    )
    assert sorted((r["id"], r["name"], r["code"]) for r in first) == [
        (1, "ann", "A"),
        (2, "bob", "B"),
        (3, "cy", "C"),
    ]
    assert abs(next(r["price"] for r in first if r["id"] == 1) - 0.1) < 1e-6

    assert_replay_rebuilds(project, name, "history", "current", "changelog")


def delta_config(name: str, business_date: str) -> dict[str, Any]:
    return full_config(name, business_date, extract_type="delta")


# A delta carries some keys only: id 2 is seen on the second date and not again until the
# fourth, after the column was added: its first email alone is no update either.
DELTA_IDS = {DATES[0]: [1, 2, 3], DATES[1]: [2], DATES[2]: [1, 3], DATES[3]: [2, 4]}


def test_a_delta_table_keeps_versions_seen_before_the_change(project: Any) -> None:
    name = "evolving_delta"

    def deliver(project: Any, name: str, business_date: str) -> None:
        rows = [r for r in ROWS[business_date] if r[0] in DELTA_IDS[business_date]]
        if business_date == DATES[3]:
            rows = [(2, None, 2, 0.2, "B", "bo@x"), (4, None, 4, 0.4, "D", "d@x")]
        write_extract(project, name, business_date, rows)

    updates = {DATES[0]: [], DATES[1]: [2], DATES[2]: [3], DATES[3]: []}
    expected = {
        DATES[0]: {"I": 3},
        DATES[1]: {"U": 1, "X": 2},
        DATES[2]: {"U": 1, "N": 1, "X": 1},
        DATES[3]: {"N": 1, "I": 1, "X": 2},
    }
    run_dates(project, name, delta_config, deliver, updates, expected)
    current = {r["id"]: r for r in project.rows(f"select * from {name}_current")}
    assert current[2]["email"] == "bo@x" and str(current[2]["eff_start_date"]) == DATES[1]
    # id 3 was last supplied on the third date: its name stays as supplied then.
    assert current[3]["name"] == "cyd" and current[3]["email"] == "cy@x"
    assert_replay_rebuilds(project, name, "history", "current")


def feed_config_on(name: str, business_date: str) -> dict[str, Any]:
    return feed_config(name, columns_on(business_date))


def event_image(business_date: str, row: tuple) -> dict[str, Any]:
    return source_values(business_date, row)


def feed_events(business_date: str) -> list[Event]:
    """The date's change events; each image carries the fields the source has that day."""
    day = DATES.index(business_date)
    rows = {r[0]: r for r in ROWS[business_date]}

    def image(key: int) -> dict[str, Any]:
        return event_image(business_date, rows[key])

    def upsert(lsn: int, key: int) -> Event:
        return update(lsn, {"id": key}, **image(key))

    if day == 0:
        return [create(10 + key, **image(key)) for key in (1, 2, 3)]
    if day == 1:
        return [upsert(20, 2)]
    if day == 2:
        return [upsert(30, 1), upsert(31, 3)]
    fourth = {2: (2, None, 2, 0.2, "B", "bo@x"), 4: (4, None, 4, 0.4, "D", "d@x")}
    return [
        update(40, {"id": 2}, **event_image(business_date, fourth[2])),
        create(41, **event_image(business_date, fourth[4])),
        delete(42, id=3),
    ]


def test_a_change_feed_applies_events_of_every_shape(project: Any) -> None:
    name = "evolving_feed"

    def deliver(project: Any, name: str, business_date: str) -> None:
        events = json_lines(feed_events(business_date))
        project.write_text(f"landing/{name}/{business_date}/events.json", events)

    updates = {DATES[0]: [], DATES[1]: [2], DATES[2]: [3], DATES[3]: []}
    expected = {
        DATES[0]: {"I": 3},
        DATES[1]: {"U": 1, "X": 2},
        DATES[2]: {"U": 1, "N": 1, "X": 1},
        DATES[3]: {"N": 1, "I": 1, "D": 1, "X": 1},
    }
    run_dates(project, name, feed_config_on, deliver, updates, expected)
    types = column_types(project, f"{name}_state")
    assert types["qty"] == "bigint" and types["price"] == "double" and "code" in types
    current = {r["id"]: r for r in project.rows(f"select * from {name}_current")}
    assert sorted(current) == [1, 2, 4]
    assert current[1]["email"] == "ann@x" and str(current[1]["eff_start_date"]) == DATES[0]
    assert current[2]["email"] == "bo@x" and str(current[2]["eff_start_date"]) == DATES[1]
    assert_replay_rebuilds(project, name, "history", "current")


def simple_config(name: str, columns: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "extract_type": "full",
        "source": {"path": f"landing/{name}/{{business_date}}.csv"},
        "columns": columns,
        **extra,
    }


def has_yaml_lines(out: str, column: str, column_type: str) -> bool:
    """Whether the message shows a new column's YAML (dbt indents an error's lines)."""
    lines = rf"- name: {column}\n *type: {column_type}\n *added: '{DATES[0]}'\n"
    return re.search(lines, out) is not None


def test_new_extract_columns_are_named_with_the_yaml_that_adds_them(
    project: Any, capsys: Any
) -> None:
    name = "grown"
    project.add_table(simple_config(name, BEFORE[:2]))
    header = ["id", "name", "email", "score", "joined"]
    rows = [[1, "ann", "ann@x", 7, "2024-01-05"], [2, "bob", None, 12, "2024-02-01"]]
    project.write_csv(f"landing/{name}/{DATES[0]}.csv", header, rows)
    assert cli(project, "run", "--date", DATES[0], "--select", name) != 0
    out = capsys.readouterr().out
    assert "extra column(s) email, score, joined" in out
    for column, column_type in (("email", "string"), ("score", "int"), ("joined", "date")):
        assert has_yaml_lines(out, column, column_type)
    assert "nothing was written" in out
    assert not project.spark.catalog.tableExists(f"{name}_state")

    # A parquet extract: the types come from its schema.
    parquet = "grown_parquet"
    config = simple_config(parquet, BEFORE[:2])
    config["source"] = {"path": f"landing/{parquet}/{{business_date}}", "format": "parquet"}
    project.add_table(config)
    frame = project.spark.createDataFrame([(1, "ann", 2.5)], "id int, name string, score double")
    frame.write.parquet(str(project.root / f"landing/{parquet}/{DATES[0]}"))
    assert cli(project, "run", "--date", DATES[0], "--select", parquet) != 0
    out = capsys.readouterr().out
    assert "extra column(s) score" in out and has_yaml_lines(out, "score", "double")

    # A change feed loads its events, and names the fields it does not load.
    feed = "grown_feed"
    project.add_table(feed_config(feed, BEFORE[:2]))
    events = [create(1, id=1, name="ann", email="ann@x", score=2.5)]
    project.write_text(f"landing/{feed}/{DATES[0]}/events.json", json_lines(events))
    assert cli(project, "run", "--date", DATES[0], "--select", feed) == 0
    out = capsys.readouterr().out
    assert "not loaded: email, score" in out
    assert has_yaml_lines(out, "score", "double")


def test_narrowing_is_refused_and_a_killed_rewrite_is_finished(project: Any, capsys: Any) -> None:
    name = "narrowed"
    columns = [{"name": "id", "type": "int", "key": True}, {"name": "qty", "type": "bigint"}]
    project.add_table(simple_config(name, columns, changelog=True))
    for business_date in DATES[:2]:
        project.write_csv(f"landing/{name}/{business_date}.csv", ["id", "qty"], [[1, 5], [2, 6]])
    assert cli(project, "run", "--date", DATES[0], "--select", name) == 0

    project.add_table(simple_config(name, [columns[0], {"name": "qty", "type": "int"}]))
    capsys.readouterr()
    assert cli(project, "run", "--date", DATES[1], "--select", name) != 0
    out = capsys.readouterr().out
    assert f"{project.schema}.{name}_state: column 'qty': bigint to int narrows the column" in out
    assert "Add a new column instead" in out and "nothing was written" in out
    assert column_types(project, f"{name}_state")["qty"] == "bigint"
    assert [a.business_date for a in applied_versions(project.spark, f"{name}_state")] == [DATES[0]]

    # A run killed while rewriting the changelog (parquet) for a widening: the changelog
    # renamed aside and its copy complete; and a partial copy of the history, which a
    # killed upgrade of an earlier release's history leaves. The next run finishes both
    # (the state and the history, Delta tables, are rewritten in one commit each).
    history, changelog = f"{project.schema}.{name}_history", f"{project.schema}.{name}_changelog"
    spark = project.spark
    spark.sql(f"alter table {changelog} rename to {changelog}__hashcdc_retired")
    spark.sql(
        f"create table {changelog}__hashcdc_rewrite using parquet partitioned by (business_date) "
        f"as select * from {changelog}__hashcdc_retired"
    )
    spark.sql(f"create table {history}__hashcdc_rewrite as select * from {history} where false")
    project.add_table(
        simple_config(
            name, [{"name": "id", "type": "bigint", "key": True}, columns[1]], changelog=True
        )
    )
    capsys.readouterr()
    assert cli(project, "run", "--date", DATES[1], "--select", name) != 0
    assert f"a run was killed while {changelog} was being rewritten" in capsys.readouterr().out
    assert cli(project, "run", "--date", DATES[1], "--select", name) == 0
    for leftover in (
        "_changelog__hashcdc_retired",
        "_changelog__hashcdc_rewrite",
        "_history__hashcdc_rewrite",
    ):
        assert not spark.catalog.tableExists(f"{project.schema}.{name}{leftover}")
    assert column_types(project, f"{name}_state")["id"] == "bigint"
    assert counts(project, name, DATES[1]) == {"N": 2}
    assert counts(project, name, DATES[0]) == {"I": 2}


def test_a_new_columns_first_values_can_count_as_updates(project: Any) -> None:
    name = "added_as_update"
    columns = [{"name": "id", "type": "int", "key": True}, {"name": "name", "type": "string"}]
    project.add_table(simple_config(name, columns))
    project.write_csv(f"landing/{name}/{DATES[0]}.csv", ["id", "name"], [[1, "a"], [2, "b"]])
    assert cli(project, "run", "--date", DATES[0], "--select", name) == 0
    email = {"name": "email", "type": "string", "added": DATES[1], "added_as_update": True}
    project.add_table(simple_config(name, [*columns, email]))
    rows = [[1, "a", "a@x"], [2, "b", None]]
    project.write_csv(f"landing/{name}/{DATES[1]}.csv", ["id", "name", "email"], rows)
    assert cli(project, "run", "--date", DATES[1], "--select", name) == 0
    assert updated_ids(project, name, DATES[1]) == [1]
    assert counts(project, name, DATES[1]) == {"U": 1, "N": 1}


SECRETS = {1: ("SSN-111-11-1111", "1970-01-01"), 2: ("SSN-222-22-2222", "1980-02-02")}
NEW_SECRET = "SSN-999-99-9999"
PEOPLE = [
    {"name": "id", "type": "int", "key": True},
    {"name": "city", "type": "string"},
    {"name": "ssn", "type": "string", "sensitive": True},
]


def test_sensitive_columns_live_only_in_the_sensitive_tables(project: Any) -> None:
    name = "people"
    # The extract's `city` is the lake's `town`; `note` is carried, not compared.
    columns = [
        *PEOPLE,
        {"name": "birth_date", "type": "date", "sensitive": True},
        {"name": "note", "type": "string", "ignore": True},
    ]
    columns[1] = {"name": "town", "type": "string", "source_name": "city"}
    project.add_table(simple_config(name, columns, changelog=True, max_rejects=2))
    header = ["id", "city", "ssn", "birth_date", "note"]
    first = [[key, "Oslo", *secret, "first"] for key, secret in SECRETS.items()]
    # id 1's ssn changes and id 2 moves; a row with a bad date is rejected.
    second = [[1, "Oslo", NEW_SECRET, SECRETS[1][1], "n"], [2, "Rome", *SECRETS[2], "n"]]
    second.append([3, "Pisa", "SSN-333-33-3333", "not a date", "n"])
    malformed = '4,"Pisa","SSN-444-44-4444"\n'  # a field short: the raw line is withheld
    project.write_csv(f"landing/{name}/{DATES[0]}.csv", header, first)
    second_extract = project.write_csv(f"landing/{name}/{DATES[1]}.csv", header, second)
    second_extract.write_text(second_extract.read_text() + malformed)
    for business_date in DATES[:2]:
        assert cli(project, "run", "--date", business_date, "--select", name) == 0

    for relation in ("state", "current", "history", "changelog", "scd2"):
        types = column_types(project, f"{name}_{relation}")
        assert not {"ssn", "birth_date"} & set(types), relation
        assert "ssn" not in types.get("after_image", ""), relation
    # Change detection sees the sensitive change, in the sensitive tables.
    changes = project.rows(
        f"select operation, ssn from {name}_sensitive_history "
        f"where business_date = date'{DATES[1]}'"
    )
    assert changes == [{"operation": "U", "ssn": NEW_SECRET}]
    assert updated_ids(project, name, DATES[1]) == [2]
    # An authorised reader joins the values back by keyhash.
    joined = project.rows(
        f"select c.id, c.town, s.ssn from {name}_current c "
        f"join {name}_sensitive_current s on c.keyhash = s.keyhash"
    )
    assert sorted((r["id"], r["town"], r["ssn"]) for r in joined) == [
        (1, "Oslo", NEW_SECRET),
        (2, "Rome", SECRETS[2][0]),
    ]
    rejected = project.rows(f"select raw_values, raw_line from {name}_rejects order by row_number")
    assert rejected[0]["raw_values"]["ssn"] == "(sensitive value)"
    assert rejected[1]["raw_line"] == "(line withheld: the table has sensitive columns)"

    # No file of the main tables holds a sensitive value, in its bytes or once decoded.
    secrets = [s for pair in SECRETS.values() for s in pair]
    secrets += [NEW_SECRET, "SSN-333-33-3333", "SSN-444-44-4444"]
    for relation in ("state", "history", "changelog", "rejects"):
        location = project.rows(f"describe table extended {name}_{relation}")
        path = next(r["data_type"] for r in location if r["col_name"] == "Location")
        files = [f for f in Path(path.removeprefix("file:")).rglob("*") if f.is_file()]
        assert files, relation
        for file in files:
            data = file.read_bytes()
            assert not any(secret.encode() in data for secret in secrets), file
        decoded = project.spark.table(f"{name}_{relation}").toJSON().collect()
        assert not any(secret in row for row in decoded for secret in secrets), relation

    # Each run's OpenLineage event: every column of every output with its source fields.
    events = [json.loads(line) for line in (project.root / "logs/openlineage.jsonl").open()]
    [event, *_] = [e for e in reversed(events) if e["job"]["name"].endswith(f".{name}")]
    assert event["eventType"] == "COMPLETE"
    assert event["inputs"][0]["name"] == f"landing/{name}/{{business_date}}.csv"
    lineage = {
        output["name"].split(".")[-1]: {
            column: sorted(f["field"] for f in fields["inputFields"])
            for column, fields in output["facets"]["columnLineage"]["fields"].items()
        }
        for output in event["outputs"]
    }
    suffixes = ["current", "history", "scd2", "changelog", "rejects", "sensitive_current",
                "sensitive_history"]  # fmt: skip
    assert sorted(lineage) == sorted(f"{name}_{suffix}" for suffix in suffixes)
    for relation, columns in lineage.items():
        assert sorted(columns) == sorted(project.spark.table(relation).columns), relation
    current, sensitive = lineage[f"{name}_current"], lineage[f"{name}_sensitive_current"]
    assert (current["town"], current["note"], current["keyhash"]) == (["city"], ["note"], ["id"])
    assert current["nonkeyhash"] == ["city"] and "ssn" not in current
    assert sensitive["ssn"] == ["ssn"] and sensitive["nonkeyhash"] == ["birth_date", "ssn"]
    assert lineage[f"{name}_changelog"]["after_image"] == ["city", "id", "note"]
    assert lineage[f"{name}_rejects"]["raw_values"] == sorted(header)
    assert lineage[f"{name}_history"]["business_date"] == []


def test_a_change_feeds_sensitive_columns_have_their_own_state(project: Any) -> None:
    name = "sensitive_feed"
    project.add_table(feed_config(name, PEOPLE))
    days = [
        [
            create(1, id=1, city="Oslo", ssn=SECRETS[1][0]),
            create(2, id=2, city="Rome", ssn=SECRETS[2][0]),
        ],
        # id 1's ssn changes only; id 2 is deleted.
        [update(3, {"id": 1}, id=1, city="Oslo", ssn=NEW_SECRET), delete(4, id=2)],
    ]
    for business_date, events in zip(DATES, days, strict=False):
        project.write_text(f"landing/{name}/{business_date}/events.json", json_lines(events))
        assert cli(project, "run", "--date", business_date, "--select", name) == 0
    main_ops = project.rows(
        f"select id, operation from {name}_state where business_date = date'{DATES[1]}' "
        f"and operation in ('I', 'U', 'N') union all select id, operation from {name}_history "
        f"where business_date = date'{DATES[1]}' and operation = 'D'"
    )
    assert sorted((r["id"], r["operation"]) for r in main_ops) == [(1, "N"), (2, "D")]
    sensitive_ops = project.rows(
        f"select ssn, operation from {name}_sensitive_history "
        f"where business_date = date'{DATES[1]}'"
    )
    assert sorted((r["operation"], r["ssn"]) for r in sensitive_ops) == [
        ("D", SECRETS[2][0]),
        ("U", NEW_SECRET),
    ]
    assert "ssn" not in column_types(project, f"{name}_history")
    joined = project.rows(
        f"select c.id, s.ssn from {name}_current c "
        f"join {name}_sensitive_current s on c.keyhash = s.keyhash"
    )
    assert [(r["id"], r["ssn"]) for r in joined] == [(1, NEW_SECRET)]


def test_a_column_appended_without_added_is_inferred_and_replays(project: Any, capsys: Any) -> None:
    """Issue 25: a column appended to the YAML, no `added:`; the source sends it on day 3.

    On the same day `amount` is widened (int to bigint, a value beyond int). A replay from
    every date (issue 41: from a date after the first it stopped on the inferred column)
    gives the forward run's tables.
    """
    name = "appended"
    columns = [
        {"name": "id", "type": "int", "key": True},
        {"name": "name", "type": "string"},
        {"name": "amount", "type": "int"},
    ]
    region = {"name": "region", "type": "string"}
    rows = {1: ["a", 10], 2: ["b", 20], 3: ["c", 30], 4: ["d", 40], 5: ["e", 50]}
    project.add_table(simple_config(name, columns))
    header = ["id", "name", "amount"]
    project.write_csv(f"landing/{name}/{DATES[0]}.csv", header, [[k, *v] for k, v in rows.items()])
    # Day 2: 2 is updated, 5 deleted, 7 inserted.
    rows[2][0], rows[7] = "b2", ["g", 70]
    del rows[5]
    project.write_csv(f"landing/{name}/{DATES[1]}.csv", header, [[k, *v] for k, v in rows.items()])
    for business_date in DATES[:2]:
        assert cli(project, "run", "--date", business_date, "--select", name) == 0
    # Day 3: the user appends the column as it arrives and widens `amount`; 1 changes its
    # name, 3 its amount (beyond int), 6 is new.
    widened = [*columns[:2], {"name": "amount", "type": "bigint"}]
    project.add_table(simple_config(name, [*widened, region]))
    rows[1][0], rows[3][1], rows[6] = "a2", 3_000_000_000, ["f", 60]
    day3 = [[key, *values, "south" if key == 6 else "north"] for key, values in rows.items()]
    project.write_csv(f"landing/{name}/{DATES[2]}.csv", [*header, "region"], day3)
    capsys.readouterr()
    assert cli(project, "run", "--date", DATES[2], "--select", name) == 0
    notices = [line for line in capsys.readouterr().out.splitlines() if "'region'" in line]
    assert len(notices) == 1, notices
    assert "taken as added on that date" in notices[0]
    assert f"add `added: '{DATES[2]}'`" in notices[0]
    assert updated_ids(project, name, DATES[2]) == [1, 3]
    assert counts(project, name, DATES[2]) == {"U": 2, "N": 3, "I": 1}
    # The column takes part in change detection from then on, and no notice again.
    day4 = [list(row) for row in day3]
    day4[1][3] = "east"
    project.write_csv(f"landing/{name}/{DATES[3]}.csv", [*header, "region"], day4)
    assert cli(project, "run", "--date", DATES[3], "--select", name) == 0
    assert "taken as added" not in capsys.readouterr().out
    assert updated_ids(project, name, DATES[3]) == [2]
    # Replay from every date, latest first: the older extracts without the column load,
    # the same tables each time.
    forward = snapshot(project, name, "history", "current")
    for business_date in reversed(DATES):
        assert cli(project, "replay", "--from", business_date, "--select", name) == 0
        replayed = snapshot(project, name, "history", "current")
        for relation, expected in forward.items():
            assert set(replayed[relation]) ^ set(expected) == set(), (business_date, relation)

    # A column that cannot be inferred (a date not after the latest): the exact YAML line.
    project.add_table(simple_config(name, [*widened, region, {"name": "zone", "type": "int"}]))
    capsys.readouterr()
    assert cli(project, "replay", "--from", DATES[1], "--select", name) == 1
    out = capsys.readouterr().out
    assert f"is not after the latest processed date {DATES[3]}" in out
    assert f"  - {{name: zone, type: 'int', added: '{DATES[1]}'}}" in out
    assert updated_ids(project, name, DATES[3]) == [2]
