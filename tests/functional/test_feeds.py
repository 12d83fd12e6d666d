"""Change feeds (extract_type: changes) through the real pipeline.

The two worked examples of a replicator design (with and without a primary key) are
replayed as Debezium feeds over three business dates; copies of both tables receive the
same events re-delivered and out of order and must end identical.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from feed_events import Event, create, delete, feed_config, json_lines, update

DATES = ["2024-05-01", "2024-05-02", "2024-05-03"]
PERSON = [{"name": "id", "type": "int", "key": True}, {"name": "name", "type": "string"}]
NAME_ONLY = [{"name": "name", "type": "string"}]

# (a) With a primary key: insert (0,'alice'); update id 0->1; update id 1->2; delete id 2;
# insert (0,'Alice') and (1,'blob'); update name to 'Bob' where id 1.
WITH_KEY: list[list[Event]] = [
    [
        create(1, id=0, name="alice"),
        update(2, {"id": 0, "name": "alice"}, id=1, name="alice"),
        update(3, {"id": 1, "name": "alice"}, id=2, name="alice"),
    ],
    [delete(4, id=2), create(5, id=0, name="Alice"), create(6, id=1, name="blob")],
    [update(7, {"id": 1, "name": "blob"}, id=1, name="Bob")],
]
# (b) Without a primary key: insert 'alice', 'alice', 'Bob'; both 'alice' rows updated to
# 'Alyce', then both to 'Alice'; both 'Alice' rows deleted.
WITHOUT_KEY: list[list[Event]] = [
    [create(1, name="alice"), create(2, name="alice"), create(3, name="Bob")],
    [
        update(4, {"name": "alice"}, name="Alyce"),
        update(5, {"name": "alice"}, name="Alyce"),
        update(6, {"name": "Alyce"}, name="Alice"),
        update(7, {"name": "Alyce"}, name="Alice"),
    ],
    [delete(8, name="Alice"), delete(9, name="Alice")],
]


def _deliver_in_order(project: Any, table: str, days: list[list[Event]]) -> None:
    for business_date, events in zip(DATES, days, strict=True):
        project.write_text(f"landing/{table}/{business_date}/events.json", json_lines(events))


def _deliver_messily(project: Any, table: str, days: list[list[Event]]) -> None:
    """Each date's events shuffled over two files, every earlier date's file sent again."""
    shuffler = random.Random(7)
    for day, business_date in enumerate(DATES):
        events = list(days[day])
        shuffler.shuffle(events)
        half = len(events) // 2
        folder = f"landing/{table}/{business_date}"
        # Listed and read in another order than the log's: b before a, a holds later events.
        project.write_text(f"{folder}/b.json", json_lines(events[:half], wrapped=True))
        project.write_text(f"{folder}/a.json", json_lines(events[half:]))
        for earlier in range(day):
            project.write_text(f"{folder}/again_{earlier}.json", json_lines(days[earlier]))
        if day:  # the same file twice within one date, too
            project.write_text(f"{folder}/a_copy.json", json_lines(events[half:]))


def _rows(project: Any, sql: str) -> list[tuple]:
    return sorted((tuple(str(v) for v in r.values()) for r in project.rows(sql)), key=repr)


def test_worked_examples_reach_their_final_states(project: Any) -> None:
    project.add_table(feed_config("people_feed", PERSON, changelog=True))
    project.add_table(feed_config("people_messy", PERSON))
    project.add_table(feed_config("names_feed", NAME_ONLY))
    project.add_table(feed_config("names_messy", NAME_ONLY))
    _deliver_in_order(project, "people_feed", WITH_KEY)
    _deliver_messily(project, "people_messy", WITH_KEY)
    _deliver_in_order(project, "names_feed", WITHOUT_KEY)
    _deliver_messily(project, "names_messy", WITHOUT_KEY)
    for business_date in DATES:
        outcome = project.build(business_date)
        assert outcome.success, outcome.text

    # The audit of the last date: the events read, and the watermark the state holds.
    [audit] = project.rows(
        "select rows_in, status, watermark, latest_event_at from cdc_runs "
        f"where table_name = 'people_feed' and business_date = date'{DATES[-1]}'"
    )
    [watermark] = project.rows(
        "select to_json(event_sequence) as w from people_feed_state "
        f"where operation = 'W' and business_date = date'{DATES[-1]}'"
    )
    assert audit["status"] == "success" and audit["rows_in"] > 0
    assert audit["watermark"] == watermark["w"] and "source_lsn" in audit["watermark"]
    # Debezium's ts_ms of the test events: 1,700,000,000,000 ms + their lsn.
    assert dt.datetime(2023, 11, 14, 22, 13) < audit["latest_event_at"] < dt.datetime(2023, 11, 15)

    # (a) final rows (0,'Alice'), (1,'Bob'); history: net changes per date.
    assert project.rows("select id, name from people_feed_current order by id") == [
        {"id": 0, "name": "Alice"},
        {"id": 1, "name": "Bob"},
    ]
    history = project.rows(
        "select cast(business_date as string) as d, operation, id, name from people_feed_history"
        " order by d, id"
    )
    assert [tuple(h.values()) for h in history] == [
        (DATES[0], "I", 2, "alice"),
        (DATES[1], "I", 0, "Alice"),
        (DATES[1], "I", 1, "blob"),
        (DATES[1], "D", 2, "alice"),
        (DATES[2], "U", 1, "Bob"),
    ]
    changelog = project.rows(
        "select before_image.name as before, after_image.name as after, changed_columns "
        f"from people_feed_changelog where business_date = date'{DATES[2]}'"
    )
    assert changelog == [{"before": "blob", "after": "Bob", "changed_columns": ["name"]}]

    # (b) final row 'Bob' only; the two identical rows were counted on the way.
    assert project.rows("select name from names_feed_current") == [{"name": "Bob"}]
    history = project.rows(
        "select cast(business_date as string) as d, operation, name, copies "
        "from names_feed_history order by d, name"
    )
    assert [tuple(h.values()) for h in history] == [
        (DATES[0], "I", "Bob", 1),
        (DATES[0], "I", "alice", 2),
        (DATES[1], "I", "Alice", 2),
        (DATES[1], "D", "alice", 2),
        (DATES[2], "D", "Alice", 2),
    ]

    # Re-delivered and out-of-order files change nothing: current and history identical.
    for clean, messy in (("people_feed", "people_messy"), ("names_feed", "names_messy")):
        for relation in ("current", "history"):
            assert _rows(project, f"select * from {messy}_{relation}") == _rows(
                project, f"select * from {clean}_{relation}"
            ), (messy, relation)
