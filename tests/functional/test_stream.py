"""``hashcdc stream``: change events applied as they land, closed dates equal daily runs.

A Debezium feed lands over two business dates in several files (one delivered twice).
In the test process, ``hashcdc stream --once`` applies what has landed after each
delivery: ``current`` shows every landed event; a date stays open (no history) until the
next date's first events, when the stream closes it. A twin table gets the same files
through daily ``hashcdc run`` dates: once the stream's dates are closed (one by
``hashcdc run --date``, as a user closes it, the last by a stream's ``--close-after`` once
the date is over), current and history equal the twin's.

A backlog is read in bounded batches (``--max-files``), in landing order.

Then as a service: ``hashcdc stream`` in the project's engine while files land, queried
while it runs, the engine SIGKILLed during a batch and the stream started again, a new
file read alone by the next batch, and a
SIGTERM that stops it after its running batch; current and the closed date's history
end as the daily path's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from feed_events import create, delete, feed_config, json_lines, truncate, update
from servers import (
    Lines,
    alive,
    engine_pids,
    hashcdc,
    hashcdc_environment,
    query_rows,
    wait_until,
)

from hashcdc.cli import main

DATES = ["2024-06-01", "2024-06-02"]
PERSON = [{"name": "id", "type": "int", "key": True}, {"name": "name", "type": "string"}]
FIRST = [create(1, id=0, name="alice"), create(2, id=1, name="bob"), create(3, id=2, name="carol")]
# An update, a delete, a key change (0 -> 5) and an insert.
SECOND = [
    update(4, {"id": 1, "name": "bob"}, id=1, name="bobby"),
    delete(5, id=2),
    update(6, {"id": 0, "name": "alice"}, id=5, name="alice"),
    create(7, id=3, name="dave"),
]
# The next date, in three files: an update, then a truncate and two inserts after it.
NEXT_FILES = {
    "a": [update(8, {"id": 3, "name": "dave"}, id=3, name="david")],
    "b": [truncate(9)],
    "c": [create(10, id=8, name="eve"), create(11, id=11, name="frank")],
}
NEXT = [event for events in NEXT_FILES.values() for event in events]
# The third date, after one insert: in its two next files a key changed and changed back
# (no change), an insert updated, a key deleted and made again (an update).
THIRD = "2024-06-03"
THIRD_FILES = {
    "a": [create(30, id=9, name="fay")],
    "b": [
        update(31, {"id": 8, "name": "eve"}, id=8, name="eva"),
        delete(32, id=11, name="frank"),
        update(33, {"id": 9, "name": "fay"}, id=9, name="faye"),
    ],
    "c": [
        update(34, {"id": 8, "name": "eva"}, id=8, name="eve"),
        create(35, id=11, name="franz"),
    ],
}


def _hashcdc(project: Any, *args: str) -> int:
    return main(["--project-dir", str(project.root), *args])


def _deliver(project: Any, table: str, date: str, name: str, events: list[Any]) -> None:
    project.write_text(f"landing/{table}/{date}/{name}.json", json_lines(events))


def _current(project: Any, table: str) -> list[tuple[int, str]]:
    rows = project.rows(f"select id, name from {table}_current order by id")
    return [(row["id"], row["name"]) for row in rows]


def _history(project: Any, table: str) -> list[tuple[str, str, int, str]]:
    rows = project.rows(
        "select cast(business_date as string) as d, operation, id, name "
        f"from {table}_history order by d, id, operation"
    )
    return [tuple(row.values()) for row in rows]


def _changelog(project: Any, table: str) -> list[tuple[str, str | None, str | None]]:
    rows = project.rows(
        "select operation, to_json(before_image) as before, to_json(after_image) as after "
        f"from {table}_changelog order by business_date, keyhash, operation"
    )
    return [(row["operation"], row["before"], row["after"]) for row in rows]


def _tags(project: Any, table: str) -> list[tuple[int, str, str]]:
    rows = project.rows(
        f"select id, operation, cast(eff_start_date as string) as since from {table}_current "
        "order by id"
    )
    return [(row["id"], row["operation"], row["since"]) for row in rows]


def _state_operations(project: Any, table: str) -> list[str]:
    rows = project.rows(f"describe history {project.schema}.{table}_state")
    return [row["operation"] for row in rows]


def _dates(project: Any, table: str) -> list[tuple[str, bool]]:
    from hashcdc.state.versions import applied_versions

    state = f"{project.schema}.{table}_state"
    return [(a.business_date, a.is_open) for a in applied_versions(project.spark, state)]


def test_stream_applies_each_event_once_and_its_closed_dates_equal_daily_runs(
    project: Any, capsys: Any
) -> None:
    project.add_table(feed_config("streamed", PERSON, changelog=True))
    project.add_table(feed_config("daily_twin", PERSON, changelog=True))

    # The first delivery: applied, the date open, no history yet.
    _deliver(project, "streamed", DATES[0], "a", FIRST)
    assert _hashcdc(project, "stream", "--select", "streamed", "--once") == 0
    assert _current(project, "streamed") == [(0, "alice"), (1, "bob"), (2, "carol")]
    assert _dates(project, "streamed") == [(DATES[0], True)]
    assert "applied: I 3 U 0 D 0 (3 event(s) read)" in capsys.readouterr().out

    # The second, with the first file delivered again: only its new events are applied,
    # on top of the first batch (no restore), each once.
    _deliver(project, "streamed", DATES[0], "b", SECOND)
    _deliver(project, "streamed", DATES[0], "a_again", FIRST)
    assert _hashcdc(project, "stream", "--select", "streamed", "--once") == 0
    assert _current(project, "streamed") == [(1, "bobby"), (3, "dave"), (5, "alice")]
    out = capsys.readouterr().out
    # Keys 3 and 5 inserted, 1 updated, 2 and 0 (moved to 5) deleted.
    assert "applied: I 2 U 1 D 2 (10 event(s) read)" in out, out
    assert "skipped" not in out
    # The audit saw the batch's new events: the latest one's commit time gives the lag.
    assert "; lag " in out, out
    # No history while the date is open: it is written when the date closes.
    assert not project.spark.catalog.tableExists(f"{project.schema}.streamed_history")

    # The next date's first events, landed as three files, and a new stream that reads at
    # most one file a batch (bounded batches, in landing order). It looks at every landed
    # date once: the open date's three files add nothing (no event is new); the open date
    # is closed (whole, with its history and tests); then the new date's files are applied
    # one by one — an update, a truncate that deletes every key (alone in its batch, it is
    # the batch's watermark), an insert after it.
    for name, events in NEXT_FILES.items():
        _deliver(project, "streamed", DATES[1], name, events)
    assert _hashcdc(project, "stream", "--select", "streamed", "--once", "--max-files", "1") == 0
    out = capsys.readouterr().out
    assert f"streamed {DATES[0]}: closed: I 3 U 0 D 0 (10 event(s) read)" in out, out

    def applied(date: str) -> list[str]:
        lines = [line for line in out.splitlines() if f"{date}: applied: " in line]
        return [line.split(": applied: ")[1].split(" in ")[0] for line in lines]

    assert applied(DATES[0]) == [
        "I 0 U 0 D 0 (3 event(s) read)",
        "I 0 U 0 D 0 (4 event(s) read)",
        "I 0 U 0 D 0 (3 event(s) read)",
    ], out
    assert applied(DATES[1]) == [
        "I 0 U 1 D 0 (1 event(s) read)",
        "I 0 U 0 D 3 (1 event(s) read)",
        "I 2 U 0 D 0 (2 event(s) read)",
    ], out
    assert _current(project, "streamed") == [(8, "eve"), (11, "frank")]
    assert _dates(project, "streamed") == [(DATES[0], False), (DATES[1], True)]
    # Closed on top of its micro-batches, not restored to the date before and applied
    # again: a reader of current never saw the date before come back.
    assert "RESTORE" not in _state_operations(project, "streamed")

    # A daily run of a later date is refused while the stream's date is open (it would
    # be left without history); nothing is written.
    _deliver(project, "streamed", THIRD, "a", THIRD_FILES["a"])
    assert _hashcdc(project, "run", "--date", THIRD, "--select", "streamed") == 1
    out = capsys.readouterr().out
    assert f"business date {DATES[1]} was applied by `hashcdc stream` and is still open" in out
    assert _current(project, "streamed") == [(8, "eve"), (11, "frank")]

    # A user closes the last date with a daily run of it (on top of its batches too).
    assert _hashcdc(project, "run", "--date", DATES[1], "--select", "streamed") == 0
    assert _dates(project, "streamed") == [(DATES[0], False), (DATES[1], False)]
    assert "RESTORE" not in _state_operations(project, "streamed")

    # The third date in two micro-batches (the first two files, then the third); then a
    # stream that closes a date itself once it is over (`--close-after`: minutes after its
    # end in the table's time zone), with no later event: its net changes, as a daily run
    # of the date has them (below).
    for name in "bc":
        _deliver(project, "streamed", THIRD, name, THIRD_FILES[name])
    assert _hashcdc(project, "stream", "--select", "streamed", "--once", "--max-files", "2") == 0
    assert [line for line in capsys.readouterr().out.splitlines() if ": applied: " in line]
    assert _dates(project, "streamed")[-1] == (THIRD, True)
    closing = ["stream", "--select", "streamed", "--once", "--close-after", "60"]
    assert _hashcdc(project, *closing) == 0
    assert f"streamed {THIRD}: closed: " in capsys.readouterr().out
    assert _dates(project, "streamed")[-1] == (THIRD, False)
    assert "RESTORE" not in _state_operations(project, "streamed")

    # The twin, run daily from the same files, holds the same current (with each row's
    # operation and effective date) and history.
    for date, files in (
        (DATES[0], {"a": FIRST, "b": SECOND, "a_again": FIRST}),
        (DATES[1], {"a": NEXT}),
        (THIRD, THIRD_FILES),
    ):
        for name, events in files.items():
            _deliver(project, "daily_twin", date, name, events)
    assert _hashcdc(project, "run", "--date", *DATES, THIRD, "--select", "daily_twin") == 0
    assert _current(project, "streamed") == _current(project, "daily_twin")
    assert _tags(project, "streamed") == _tags(project, "daily_twin")
    assert _tags(project, "streamed") == [
        (8, "N", DATES[1]), (9, "I", THIRD), (11, "U", THIRD),
    ]  # fmt: skip
    assert _history(project, "streamed") == _history(project, "daily_twin")
    assert _history(project, "streamed") == EXPECTED_HISTORY
    # The changelog's images too: a key deleted and made again has its values before the
    # date as its before image.
    assert _changelog(project, "streamed") == _changelog(project, "daily_twin")
    assert ("U", '{"id":11,"name":"frank"}', '{"id":11,"name":"franz"}') in _changelog(
        project, "streamed"
    )


EXPECTED_HISTORY = [
    (DATES[0], "I", 1, "bobby"),
    (DATES[0], "I", 3, "dave"),
    (DATES[0], "I", 5, "alice"),
    (DATES[1], "D", 1, "bobby"),
    (DATES[1], "D", 3, "dave"),
    (DATES[1], "D", 5, "alice"),
    (DATES[1], "I", 8, "eve"),
    (DATES[1], "I", 11, "frank"),
    (THIRD, "I", 9, "faye"),
    (THIRD, "U", 11, "franz"),
]


def _live_current(root: Path, env: dict[str, str]) -> list[tuple[int, str]]:
    rows = query_rows(root, env, "select id, name from live_current order by id")
    return [(int(id_), name) for id_, name in rows]


def test_stream_as_a_service_survives_a_killed_engine_and_stops_on_sigterm(
    project: Any, tmp_path: Path, engines_dir: Path
) -> None:
    project.add_table(feed_config("live", PERSON))
    env = hashcdc_environment(f"file://{tmp_path}/warehouse", "local")
    _deliver(project, "live", DATES[0], "a", FIRST)
    stream = hashcdc(project.root, env, "stream", "--interval", "0.5")
    output = Lines(stream)
    wait_until(lambda: "applied: I 3" in output.text(), 300, "the first batch")
    # A reader while the stream runs.
    assert _live_current(project.root, env) == [(0, "alice"), (1, "bob"), (2, "carol")]

    # The engine killed while the next batch runs: the batch commits whole or not at all.
    [engine] = [pid for pid in engine_pids(engines_dir) if alive(pid)]
    _deliver(project, "live", DATES[0], "b", SECOND)
    time.sleep(2)  # the stream looks every 0.5 s; a batch takes several seconds
    killed_before_commit = "applied: I 2" not in output.text()
    os.kill(engine, signal.SIGKILL)
    status, err = stream.wait(120), stream.stderr.read()
    assert status != 0 and "the engine ended" in err, err[-2000:] + output.text()[-3000:]

    # Started again (a new engine): the events of the killed batch applied once.
    _deliver(project, "live", DATES[0], "a_again", FIRST)
    stream = hashcdc(project.root, env, "stream", "--interval", "0.5")
    output = Lines(stream)
    wait_until(lambda: "applied: I" in output.text(), 300, "the batch after the restart")
    assert _live_current(project.root, env) == [(1, "bobby"), (3, "dave"), (5, "alice")]
    expected = "applied: I 2 U 1 D 2" if killed_before_commit else "applied: I 0 U 0 D 0"
    assert expected in output.text(), output.text()

    # A file more: the batch reads it alone (the stream read the others before).
    rename = update(20, {"id": 5, "name": "alice"}, id=5, name="alicia")
    _deliver(project, "live", DATES[0], "c", [rename])
    wait_until(lambda: "(1 event(s) read)" in output.text(), 300, "the batch of one new file")
    assert _live_current(project.root, env) == [(1, "bobby"), (3, "dave"), (5, "alicia")]

    # The next date: the open date closed, the new one applied; then SIGTERM.
    later = [dataclasses.replace(event, lsn=event.lsn + 20) for event in NEXT]
    _deliver(project, "live", DATES[1], "a", later)
    wait_until(lambda: f"live {DATES[1]}: applied" in output.text(), 300, "the next date")
    assert f"live {DATES[0]}: closed: I 3 U 0 D 0 (11 event(s) read)" in output.text()
    stream.send_signal(signal.SIGTERM)
    stream.wait(60)
    log = project.root / "logs" / "engine.log"
    wait_until(lambda: "hashcdc stream: stopped" in log.read_text(), 120, "the stream's stop")

    # The date the stream closed holds its net changes, each once.
    assert _live_current(project.root, env) == [(8, "eve"), (11, "frank")]
    history = query_rows(
        project.root,
        env,
        "select cast(business_date as string), operation, id, name from live_history "
        "order by 1, 3, 2",
    )
    assert [(d, op, int(id_), name) for d, op, id_, name in history] == [
        (DATES[0], "I", 1, "bobby"),
        (DATES[0], "I", 3, "dave"),
        (DATES[0], "I", 5, "alicia"),
    ]


def test_stream_refuses_a_table_that_is_not_a_change_feed(project: Any, capsys: Any) -> None:
    project.add_table(
        {
            "name": "snap",
            "extract_type": "full",
            "source": {"path": "landing/snap/{business_date}/*.csv", "format": "csv"},
            "columns": PERSON,
        }
    )
    assert _hashcdc(project, "stream", "--select", "snap", "--once") == 2
    assert "not change feeds (extract_type: changes)" in capsys.readouterr().err


def _member_commits(project: Any, group: str) -> list[tuple[str, list[str], bool]]:
    """The group state's date commits: (date, the members applied, a micro-batch), in order."""
    rows = project.rows(f"describe history {project.schema}.{group}_state")
    commits = []
    for row in sorted(rows, key=lambda r: r["version"]):
        metadata = json.loads(row["userMetadata"] or "{}")
        if "hashcdc_business_date" in metadata and metadata.get("hashcdc_members"):
            commits.append(
                (
                    metadata["hashcdc_business_date"],
                    metadata["hashcdc_members"],
                    bool(metadata.get("hashcdc_micro_batch")),
                )
            )
    return commits


def test_stream_over_a_group_applies_its_tables_in_one_batch(project: Any, capsys: Any) -> None:
    """The feeds of a group: one micro-batch (one dbt invocation, one commit) for all the
    tables with new events; a table without any is held back, its rows untouched. Their
    sensitive column is the group's sensitive state's, committed in the same batches."""
    # Service levels: the test events' commits are from 2023, so pets' minute is missed and
    # people's 4,000 days are kept.
    objectives = {"people": {"within": "4000d"}, "pets": {"within": "1m", "percent": 99}}
    pin = {"name": "pin", "type": "string", "sensitive": True}
    for name in ("people", "pets"):
        config = feed_config(name, [*PERSON, pin])
        project.add_table(config | {"group": "home", "slo": objectives[name]})

    # Only people's events: pets is held back from the batch (no commit names it).
    _deliver(project, "people", DATES[0], "a", FIRST)
    assert _hashcdc(project, "stream", "--once") == 0
    out = capsys.readouterr().out
    assert f"people {DATES[0]}: applied: I 3 U 0 D 0 (3 event(s) read)" in out, out
    assert f"pets {DATES[0]}" not in out
    assert _current(project, "people") == [(0, "alice"), (1, "bob"), (2, "carol")]
    assert _current(project, "pets") == []

    # Both tables' events (the same log positions in each): one batch applies them.
    _deliver(project, "people", DATES[0], "b", SECOND)
    _deliver(project, "pets", DATES[0], "a", FIRST + SECOND)
    assert _hashcdc(project, "stream", "--once") == 0
    out = capsys.readouterr().out
    assert f"people {DATES[0]}: applied: I 2 U 1 D 2 (7 event(s) read)" in out, out
    assert f"pets {DATES[0]}: applied: I 3 U 0 D 0 (7 event(s) read)" in out, out
    assert _member_commits(project, "home") == [
        (DATES[0], ["people"], True),
        (DATES[0], ["people", "pets"], True),
    ]
    assert _member_commits(project, "home_sensitive") == _member_commits(project, "home")
    assert _current(project, "people") == [(1, "bobby"), (3, "dave"), (5, "alice")]
    assert _current(project, "pets") == [(1, "bobby"), (3, "dave"), (5, "alice")]

    # The next date's events of pets alone: the open date is closed for both (one whole-date
    # build of the group, its history and tests), then pets' events are applied.
    _deliver(project, "pets", DATES[1], "a", NEXT)
    assert _hashcdc(project, "stream", "--once") == 0
    out = capsys.readouterr().out
    assert f"people {DATES[0]}: closed: I 3 U 0 D 0" in out, out
    assert f"pets {DATES[0]}: closed: I 3 U 0 D 0" in out, out
    assert f"pets {DATES[1]}: applied: I 2 U 0 D 3 (4 event(s) read)" in out, out
    assert _current(project, "pets") == [(8, "eve"), (11, "frank")]
    assert project.rows(
        "select c.id, s.pin from pets_current c join pets_sensitive_current s using (keyhash) "
        "order by 1"
    ) == [{"id": 8, "pin": None}, {"id": 11, "pin": None}]
    assert _current(project, "people") == [(1, "bobby"), (3, "dave"), (5, "alice")]
    expected = [
        (DATES[0], "I", 1, "bobby"),
        (DATES[0], "I", 3, "dave"),
        (DATES[0], "I", 5, "alice"),
    ]
    assert _history(project, "people") == expected
    assert _history(project, "pets") == expected

    # A stream closes the date itself once it is over: pets alone (people had no event).
    assert _hashcdc(project, "stream", "--once", "--close-after", "60") == 0
    out = capsys.readouterr().out
    assert f"pets {DATES[1]}: closed: " in out and f"people {DATES[1]}" not in out, out
    assert _history(project, "pets") == EXPECTED_HISTORY[:8]
    assert _history(project, "people") == expected
    assert _member_commits(project, "home")[-1][:2] == (DATES[1], ["pets"])

    # Each batch's oldest and newest applied event are audited: the oldest gives its lag.
    [batch] = project.rows(
        "select earliest_event_at, latest_event_at from cdc_runs where table_name = 'pets' "
        f"and command = 'run' and business_date = '{DATES[1]}' and latest_event_at is not null"
    )
    assert batch["earliest_event_at"] < batch["latest_event_at"]
    # The service levels over the last day: --check names the table whose objective broke.
    capsys.readouterr()
    assert _hashcdc(project, "status", "--check") == 1
    captured = capsys.readouterr()
    shown = " ".join(captured.out.split())
    assert "people" in shown and "100.0%" in shown and "0.0%" in shown, shown
    assert "pets: service level breached: 0.0% of 2 sample(s) within 1m" in captured.err
    assert "people" not in captured.err
