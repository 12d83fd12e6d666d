"""A change feed read from a Kafka topic (``source.kafka``), the broker started by the tests.

Debezium envelopes are published as a connector would: one topic, keyed by the row key,
each record's timestamp a little after its commit. Daily runs: a date takes the events
committed in it; events of a later date already in the topic wait for it; an event of an
earlier date published after that date ran (late) is applied with the next date, once.
The stream: ``hashcdc stream`` applies the topic as it grows (from the offsets it read up
to), goes on after the broker's restart, closes a date when the next one's events come,
and stops on SIGTERM; closed, its dates equal a daily twin's on the same topic. A topic
of two partitions read to different points: each event applied once, when it comes.
The stream in the project's engine, the engine SIGKILLed before and after a batch's commit:
the stream started again applies each event once. A table's dates in its time zone.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from servers import (
    Lines,
    finish,
    hashcdc,
    hashcdc_environment,
    kill_the_engine_when,
    models_begun,
    query_rows,
)

from hashcdc.cli import main
from hashcdc.groups.evolution import recorded_slots
from hashcdc.runtime.local_servers import free_port, wait_until

DATES = ["2024-03-01", "2024-03-02", "2024-03-03"]
TABLE = "kafka_people"
COLUMNS = [
    {"name": "id", "type": "int", "key": True},
    {"name": "name", "type": "string"},
    {"name": "score", "type": "int"},
]


def _at(date: str, clock: str) -> int:
    """A UTC moment of a date, in epoch milliseconds."""
    moment = dt.datetime.fromisoformat(f"{date}T{clock}+00:00")
    return int(moment.timestamp() * 1000)


def _event(op: str, lsn: int, committed: int, before: Any = None, after: Any = None) -> str:
    return json.dumps({
        "before": before,
        "after": after,
        "op": op,
        "ts_ms": committed + 5,
        "source": {"connector": "postgresql", "lsn": lsn, "ts_ms": committed},
    })  # fmt: skip


class Topic:
    """A topic published to as Debezium's JSON converter does (tombstones after deletes).

    ``partitions``: the topic is created with that many (else the broker's default, one).
    """

    def __init__(self, broker: Any, name: str, partitions: int = 0) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        self.name = name
        self.producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        if partitions:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            created = admin.create_topics([NewTopic(name, partitions, 1)])
            created[name].result(30)

    def publish(
        self,
        key: int,
        value: str | None,
        committed: int,
        wrapped: bool = False,
        partition: int = -1,
        flush: bool = True,
    ) -> None:
        if value is not None and wrapped:
            value = json.dumps({"schema": {"type": "struct"}, "payload": json.loads(value)})
        self.producer.produce(
            self.name,
            key=json.dumps({"id": key}),
            value=value,
            timestamp=committed + 1000,
            partition=partition,
        )
        if flush:
            assert self.producer.flush(30) == 0

    def publish_transaction(self, records: list[tuple[int, str]], committed: int) -> None:
        """Records of one source transaction (key, value), sent together, then flushed once."""
        for key, value in records:
            self.producer.produce(
                self.name, key=json.dumps({"id": key}), value=value, timestamp=committed + 1000
            )
        assert self.producer.flush(30) == 0


def _current(project: Any) -> dict[int, tuple[str, int]]:
    rows = project.rows(f"select id, name, score from {TABLE}_current")
    return {row["id"]: (row["name"], row["score"]) for row in rows}


def _history(project: Any, date: str) -> dict[int, str]:
    rows = project.rows(f"select id, operation from {TABLE}_history where business_date = '{date}'")
    return {row["id"]: row["operation"] for row in rows}


def test_daily_runs_read_a_topic_date_by_date_late_events_once(project: Any, kafka: Any) -> None:
    topic = Topic(kafka, "shop.public.people")
    project.add_table({
        "name": TABLE,
        "extract_type": "changes",
        "source": {
            "format": "debezium",
            "kafka": {"bootstrap_servers": kafka.bootstrap_servers, "topic": topic.name},
        },
        "changes": {"sequence_by": ["source.lsn"]},
        "columns": COLUMNS,
    })  # fmt: skip
    root = ["--project-dir", str(project.root)]
    first, second, third = DATES
    # Day 1: the snapshot's reads (one with the schema wrapper).
    for n in range(1, 6):
        when = _at(first, f"08:00:0{n}")
        after = {"id": n, "name": f"p{n}", "score": n * 10}
        topic.publish(n, _event("r", 100 + n, when, after=after), when, wrapped=n == 5)
    # Day 2's events are in the topic before day 1 runs: they wait for day 2.
    changes = [
        (1, "u", {"id": 1, "name": "p1", "score": 10}, {"id": 1, "name": "p1", "score": 11}),
        (1, "u", {"id": 1, "name": "p1", "score": 11}, {"id": 1, "name": "one", "score": 12}),
        (2, "d", {"id": 2, "name": "p2", "score": 20}, None),
        (6, "c", None, {"id": 6, "name": "p6", "score": 60}),
    ]
    for lsn, (key, op, before, after) in enumerate(changes, start=200):
        when = _at(second, f"09:00:{lsn - 200:02d}")
        topic.publish(key, _event(op, lsn, when, before, after), when)
        if op == "d":
            topic.publish(key, None, when)  # the tombstone
    assert main([*root, "run", "--date", first]) == 0
    assert _current(project) == {n: (f"p{n}", n * 10) for n in range(1, 6)}

    # Late: committed on day 1, published after day 1 ran. And day 3's first event.
    late = _at(first, "23:59:30")
    update = {"id": 3, "name": "late", "score": 31}
    topic.publish(3, _event("u", 150, late, {"id": 3, "name": "p3", "score": 30}, update),
                  _at(second, "00:10:00"))  # fmt: skip
    when = _at(third, "07:00:00")
    topic.publish(4, _event("d", 300, when, {"id": 4, "name": "p4", "score": 40}), when)
    assert main([*root, "run", "--date", second]) == 0
    expected = {1: ("one", 12), 3: ("late", 31), 4: ("p4", 40), 5: ("p5", 50), 6: ("p6", 60)}
    assert _current(project) == expected
    assert _history(project, second) == {1: "U", 2: "D", 3: "U", 6: "I"}

    # The same date again (a replay): the same outcome, nothing applied twice.
    assert main([*root, "run", "--date", second]) == 0
    assert _current(project) == expected
    assert _history(project, second) == {1: "U", 2: "D", 3: "U", 6: "I"}

    assert main([*root, "run", "--date", third]) == 0
    del expected[4]
    assert _current(project) == expected
    assert _history(project, third) == {4: "D"}


def _streamed_config(name: str, broker: Any, topic: str) -> dict[str, Any]:
    return {
        "name": name,
        "extract_type": "changes",
        "source": {
            "format": "debezium",
            "kafka": {"bootstrap_servers": broker.bootstrap_servers, "topic": topic},
        },
        "changes": {"sequence_by": ["source.lsn"]},
        "columns": COLUMNS[:2],
    }


def _names(project: Any, table: str) -> dict[int, str]:
    return {row["id"]: row["name"] for row in project.rows(f"select id, name from {table}_current")}


def _publish_day(
    topic: Topic, date: str, events: list[tuple[str, int, Any, Any]], flush: bool = True
) -> None:
    """Events of a date: (op, lsn, before, after), a second apart; a tombstone after a delete.

    ``flush=False``: sent with the topic's next flush."""
    for n, (op, lsn, before, after) in enumerate(events):
        when = _at(date, f"10:00:{n:02d}")
        key = (after or before or {"id": 0})["id"]
        topic.publish(key, _event(op, lsn, when, before, after), when, flush=flush)
        if op == "d":
            topic.publish(key, None, when, flush=flush)


def test_the_stream_applies_partitions_read_to_different_points_each_event_once(
    project: Any, kafka: Any, capsys: Any
) -> None:
    """A topic of three partitions, one behind the other (its producer slower, or its
    backlog longer): its records come below the sequence the other has reached, and are
    applied when they come; those committed before a truncate the other partition
    carried are void, also in a partition whose first record comes after it. Every
    ``--once`` reads the open date again from its start, as a restarted stream does:
    nothing is applied twice. Closed, the date equals a daily run's of the topic."""
    topic = Topic(kafka, "shop.public.parted", partitions=3)
    project.add_table(_streamed_config("parted", kafka, topic.name))
    project.add_table(_streamed_config("parted_twin", kafka, topic.name))
    root = ["--project-dir", str(project.root)]
    day = DATES[0]

    def publish(partition: int, op: str, lsn: int, before: Any = None, after: Any = None) -> None:
        when = _at(day, f"10:00:{lsn:02d}")
        key = (after or before or {"id": 0})["id"]
        topic.publish(key, _event(op, lsn, when, before, after), when, partition=partition)

    def stream_once() -> dict[int, str]:
        assert main([*root, "stream", "--select", "parted", "--once"]) == 0
        return _names(project, "parted")

    ben = {"id": 2, "name": "ben"}
    publish(0, "c", 10, after={"id": 1, "name": "ann"})
    publish(1, "c", 1, after=ben)
    assert stream_once() == {1: "ann", 2: "ben"}
    # Partition 1 goes on below the sequence partition 0 reached (10).
    publish(1, "u", 5, ben, {"id": 2, "name": "benny"})
    publish(1, "c", 6, after={"id": 3, "name": "cat"})
    assert stream_once() == {1: "ann", 2: "benny", 3: "cat"}
    # A truncate in partition 0; then partition 1's records of before and after it.
    publish(0, "t", 20)
    assert stream_once() == {}
    publish(1, "c", 15, after={"id": 4, "name": "void"})
    publish(1, "c", 25, after={"id": 5, "name": "eve"})
    # Partition 2's first record, from before the truncate too: no watermark of its own
    # yet, it has the floor the truncate raised.
    publish(2, "c", 18, after={"id": 7, "name": "void too"})
    assert stream_once() == {5: "eve"}
    out = capsys.readouterr().out
    for counts in ("I 2 U 0 D 0", "I 1 U 1 D 0", "I 0 U 0 D 3", "I 1 U 0 D 0"):
        assert f"parted {day}: applied: {counts}" in out, out

    assert main([*root, "run", "--date", day, "--select", "parted"]) == 0
    assert main([*root, "run", "--date", day, "--select", "parted_twin"]) == 0
    assert _names(project, "parted") == _names(project, "parted_twin") == {5: "eve"}
    history = "select business_date, operation, id, name from {}_history order by 1, 2, 3"
    assert project.rows(history.format("parted")) == project.rows(history.format("parted_twin"))


def test_a_topics_dates_are_its_commits_dates_in_the_tables_time_zone(
    project: Any, kafka: Any, capsys: Any
) -> None:
    """``changes.time_zone: America/New_York``: a record committed at 02:00 UTC on 2 March
    is of 1 March there, one at 04:30 UTC on 3 March of 2 March. The stream finds each
    record's date in the zone, its batches keep a date's records by the zone's day, and
    the dates' histories follow it (in UTC the three would be of 2 and 3 March)."""
    topic = Topic(kafka, "shop.public.zoned")
    config = _streamed_config("zoned", kafka, topic.name)
    config["changes"]["time_zone"] = "America/New_York"
    project.add_table(config)
    root = ["--project-dir", str(project.root)]
    for lsn, (key, committed) in enumerate(
        [(1, "2024-03-02T02:00:00"), (2, "2024-03-02T12:00:00"), (3, "2024-03-03T04:30:00")],
        start=1,
    ):
        date, clock = committed.split("T")
        when = _at(date, clock)
        topic.publish(key, _event("c", lsn, when, after={"id": key, "name": f"p{key}"}), when)
    assert main([*root, "stream", "--select", "zoned", "--once"]) == 0
    out = capsys.readouterr().out
    assert "zoned 2024-03-01: applied: I 1 U 0 D 0" in out, out
    assert "zoned 2024-03-01: closed: I 1 U 0 D 0" in out, out
    assert "zoned 2024-03-02: applied: I 2 U 0 D 0" in out, out
    assert main([*root, "run", "--date", "2024-03-02", "--select", "zoned"]) == 0
    rows = project.rows("select business_date, operation, id from zoned_history order by 3")
    assert [(str(r["business_date"]), r["operation"], r["id"]) for r in rows] == [
        ("2024-03-01", "I", 1),
        ("2024-03-02", "I", 2),
        ("2024-03-02", "I", 3),
    ]


class _Heard:
    """Standard output passed on as it is, its text also kept: a thread waits for a line."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return self.out.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.out, name)


def test_the_stream_applies_a_topic_as_it_grows_and_its_dates_equal_daily_runs(
    project: Any, kafka: Any, capsys: Any, monkeypatch: Any
) -> None:
    topic = Topic(kafka, "shop.public.streamed")
    # A broker away is retried (5 minutes), then the table paused.
    streamed = _streamed_config("streamed", kafka, topic.name)
    project.add_table({**streamed, "retry_for": "5m"})
    project.add_table(_streamed_config("daily_twin", kafka, topic.name))
    root = ["--project-dir", str(project.root)]
    first, second = DATES[:2]
    alice, bob, carol = (
        {"id": n, "name": name} for n, name in enumerate(["alice", "bob", "carol"])
    )
    _publish_day(topic, first, [("c", 1, None, alice), ("c", 2, None, bob), ("c", 3, None, carol)])
    # Bounded batches: at most two records a batch, so the backlog takes two.
    once = ["stream", "--select", "streamed", "--once", "--max-records", "2"]
    assert main([*root, *once]) == 0
    assert _names(project, "streamed") == {0: "alice", 1: "bob", 2: "carol"}
    out = capsys.readouterr().out
    assert "applied: I 2 U 0 D 0 (2 event(s) read)" in out, out
    assert "applied: I 1 U 0 D 0 (1 event(s) read)" in out, out

    # As a service: the topic grows while the stream runs; SIGTERM stops it.
    dave = {"id": 3, "name": "dave"}
    same_day = [
        ("u", 4, bob, {"id": 1, "name": "bobby"}),
        ("d", 5, carol, None),
        ("u", 6, alice, {"id": 5, "name": "alice"}),  # the key changes (0 -> 5)
        ("c", 7, None, dave),
    ]
    # The next day: an update, a truncate, an insert whose record carries a field the
    # config lacks (the source added a column), and a transaction of 2,000 inserts.
    next_day = [("u", 8, dave, {"id": 3, "name": "david"}), ("t", 9, None, None),
                ("c", 10, None, {"id": 8, "name": "eve", "score": 90})]  # fmt: skip
    batch = {n: f"row {n}" for n in range(100, 2100)}
    at_the_end = {8: "eve", **batch}
    after_same_day = {1: "bobby", 3: "dave", 5: "alice"}
    seen: list[dict[int, str]] = []

    def publish_while_streaming() -> None:
        try:
            _publish_day(topic, first, same_day)
            _wait(lambda: _names(project, "streamed") == after_same_day, seen, project)
            # The broker restarted between batches: the stream says so and goes on after.
            # It stays down until the stream has said so (a read under way when it went
            # down may wait for it and not notice).
            kafka.stop()
            said = "no Kafka broker answers"
            wait_until(lambda: said in heard.text, 120, f"the stream saying {said!r}")
            kafka.start()
            # The day's records sent together (one flush), so that a batch reads them all.
            _publish_day(topic, second, next_day, flush=False)
            committed = _at(second, "11:00:00")
            topic.publish_transaction(
                [
                    (n, _event("c", 10 + n, committed, after={"id": n, "name": name}))
                    for n, name in batch.items()
                ],
                committed,
            )
            _wait(lambda: _names(project, "streamed") == at_the_end, seen, project)
            scraped.update(_scrape(port))
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    heard = _Heard(sys.stdout)
    monkeypatch.setattr(sys, "stdout", heard)
    publisher = threading.Thread(target=publish_while_streaming, daemon=True)
    publisher.start()
    port, scraped = free_port(), {}
    stream = ["stream", "--select", "streamed", "--interval", "1", "--metrics-port", str(port)]
    assert main([*root, *stream]) == 0
    publisher.join(30)
    out = capsys.readouterr().out
    assert seen[-1:] == [at_the_end], (seen[-1:], out)
    # A stream started again reads its open date's records again, applying the new ones;
    # then it reads from where it read up to: the next day's records only.
    assert f"streamed {first}: applied: I 2 U 1 D 2 (7 event(s) read)" in out, out
    assert f"streamed {second}: applied: I 2001 U 0 D 3 (2003 event(s) read)" in out, out
    assert "the events carry field(s) that" in out and "not loaded: score" in out, out
    assert f"streamed {first}: closed: I 3 U 0 D 0" in out, out
    # The restart ridden through: said (again only when the cause changed), its retries
    # counted in the next batch's row.
    assert "no Kafka broker answers" in out, out
    assert "; retrying with backoff for up to 300 s" in out, out
    assert "stopped" in out, out
    [counted] = project.rows("select sum(retries) as n from cdc_runs where table_name = 'streamed'")
    retries = counted["n"]
    assert retries >= 1
    # The endpoint scraped while the stream ran says what the audit says.
    [audited] = project.rows(
        "select count(*) as runs, sum(rows_in) as rows_in, sum(inserted) as inserted, "
        "sum(retries) as retries from cdc_runs where table_name = 'streamed' and command = 'run'"
    )

    def scraped_value(name: str, **labels: str) -> float:
        return scraped[(name, tuple(sorted({"table": "streamed", **labels}.items())))]

    batches = {"command": "run"}
    assert scraped_value("hashcdc_runs_total", **batches, status="success") == audited["runs"]
    assert scraped_value("hashcdc_rows_in_total", **batches) == audited["rows_in"]
    assert (
        scraped_value("hashcdc_rows_changed_total", **batches, operation="I")
        == (audited["inserted"])
    )
    assert scraped_value("hashcdc_retries_total") == retries
    assert scraped_value("hashcdc_stream_paused") == 0
    assert ("hashcdc_lag_seconds", (("table", "streamed"),)) in scraped

    # Away for longer than retry_for (now 10 s): the stream pauses the table, says why.
    project.add_table({**streamed, "retry_for": "10s"})
    kafka.stop()
    try:
        assert main([*root, "stream", "--select", "streamed", "--once"]) == 1
    finally:
        kafka.start()
    out = capsys.readouterr().out
    assert f"hashcdc stream: streamed paused at {second}: table 'streamed': no Kafka" in out, out
    assert "(retry_for 10 s) (the other tables go on)" in out, out
    assert "stopped; failed: streamed" in out, out
    assert main([*root, "status", "--check"]) == 1
    said = capsys.readouterr()
    out = " ".join(said.out.split())
    assert f"{retries} retries;" in out and "stream paused" in out, out
    assert "streamed: the stream paused it at" in said.err, said.err
    # Started again with the broker back: nothing new, the stop is gone.
    assert main([*root, "stream", "--select", "streamed", "--once"]) == 0
    assert main([*root, "status", "--check"]) == 0
    capsys.readouterr()

    # The stream's last date closed as a user closes it; the twin runs both dates daily.
    for date in (first, second):
        assert main([*root, "run", "--date", date, "--select", "daily_twin"]) == 0
    assert main([*root, "run", "--date", second, "--select", "streamed"]) == 0
    assert _names(project, "streamed") == _names(project, "daily_twin") == at_the_end
    history = "select business_date, operation, id, name from {}_history order by 1, 2, 3"
    assert project.rows(history.format("streamed")) == project.rows(history.format("daily_twin"))


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The metrics endpoint's samples: (name, sorted labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _wait(check: Any, seen: list[dict[int, str]], project: Any, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            seen.append(_names(project, "streamed"))
            return
        time.sleep(1)
    seen.append(_names(project, "streamed"))


TABLES = ("killed", "also")


def test_a_stream_of_a_groups_topics_killed_before_and_after_a_commit_applies_each_event_once(
    project: Any, kafka: Any, tmp_path: Path, engines_dir: Path
) -> None:
    """``hashcdc stream`` in the project's engine over the topics of a table group (one of
    two partitions, one of one: a connector's tables), each batch one commit of the
    group's state for both; the engine SIGKILLed while a batch's MERGE runs (before its
    commit), then right after a batch's commit (before the stream moved its offsets or
    wrote the audit row). Each time the stream started again applies the topics from their
    open date's start: the killed batch's events once, the committed batch's not again.
    Closed, the date holds each change once in each table."""
    topics = [Topic(kafka, "shop.public.killed", partitions=2), Topic(kafka, "shop.public.also")]
    for name, topic in zip(TABLES, topics, strict=True):
        project.add_table(_streamed_config(name, kafka, topic.name) | {"group": "shop"})
    env = hashcdc_environment(f"file://{tmp_path}/warehouse", "local")
    day = DATES[0]
    alice, bob, carol = (
        {"id": n, "name": name} for n, name in enumerate(["alice", "bob", "carol"])
    )

    def publish(events: list[tuple[str, int, Any, Any]]) -> None:
        for topic in topics:
            _publish_day(topic, day, events)

    publish([("c", 1, None, alice), ("c", 2, None, bob), ("c", 3, None, carol)])
    streams = [Lines(hashcdc(project.root, env, "stream", "--interval", "0.5"))]
    wait_until(
        lambda: (
            f"killed {day}: applied: I 3" in streams[-1].text()
            and f"also {day}: applied: I 3" in streams[-1].text()
        ),
        300,
        "the first batch",
    )
    [log] = (tmp_path / "warehouse").rglob("shop_state/_delta_log")

    def commits() -> int:
        return len(list(log.glob("*.json")))

    def start_again(expected: str | dict[str, str]) -> None:
        per_table = expected if isinstance(expected, dict) else dict.fromkeys(TABLES, expected)
        streams.append(Lines(hashcdc(project.root, env, "stream", "--interval", "0.5")))
        applied = f"killed {day}: applied:"
        try:
            wait_until(lambda: applied in streams[-1].text(), 300, "a batch after the restart")
        except TimeoutError as error:
            engine_log = project.root / "logs" / "engine.log"
            tail = engine_log.read_text(errors="replace")[-3000:] if engine_log.exists() else ""
            message = f"{error}\nstream:\n{streams[-1].text()}\nengine log:\n{tail}"
            raise AssertionError(message) from error
        wait_until(lambda: f"also {day}: applied:" in streams[-1].text(), 60, "the batch's other")
        for name, applied in per_table.items():
            assert f"{name} {day}: applied: {applied}" in streams[-1].text(), streams[-1].text()

    # Killed while the batch's MERGE runs: nothing of it committed.
    before, begun = commits(), models_begun(project.root, "shop_state")
    publish([("u", 4, bob, {"id": 1, "name": "bobby"}), ("d", 5, carol, None)])
    kill_the_engine_when(
        engines_dir,
        streams[-1],
        lambda: models_begun(project.root, "shop_state") > begun,
        "MERGE of the next batch",
    )
    assert commits() == before, "the kill came after the commit: it tested nothing"
    start_again("I 0 U 1 D 1")
    assert _rows(project, env) == {0: "alice", 1: "bobby"}
    assert _rows(project, env, "also") == {0: "alice", 1: "bobby"}

    # Killed right after a batch's commit: the stream started again applies none of it.
    before = commits()
    renamed, dave = {"id": 5, "name": "alice"}, {"id": 3, "name": "dave"}
    publish([("u", 6, alice, renamed), ("c", 7, None, dave)])
    kill_the_engine_when(
        engines_dir, streams[-1], lambda: commits() > before, "commit of the next batch"
    )
    # A batch holds what each topic had when it began: the events published to the
    # second topic a moment after the first may be the next batch's, which never ran.
    # Which tables the commit holds, delta-rs reads (no JVM: the engine is dead).
    final = {1: "bobby", 3: "dave", 5: "alice"}
    committed = {name: _committed(log.parent, name) for name in TABLES}
    assert final in committed.values(), f"the commit holds neither table's batch: {committed}"
    for name, rows in committed.items():
        assert rows in (final, {0: "alice", 1: "bobby"}), f"{name}: {rows}"
    start_again({n: "I 0 U 0 D 0" if committed[n] == final else "I 2 U 0 D 1" for n in TABLES})
    assert _rows(project, env) == final
    assert _rows(project, env, "also") == final
    streams[-1].process.send_signal(signal.SIGTERM)
    streams[-1].process.wait(120)

    # Closed as a user closes it: each change of the date once.
    closing = hashcdc(project.root, env, "run", "--date", day, "--select", "killed", "also")
    status, _, err = finish(closing)
    assert status == 0, err[-2000:]
    for name in TABLES:
        history = f"select operation, id, name from {name}_history order by 2"
        assert query_rows(project.root, env, history) == [
            ["I", "1", "bobby"], ["I", "3", "dave"], ["I", "5", "alice"]
        ]  # fmt: skip


def _committed(state: Path, member: str) -> dict[int, str]:
    """``member``'s live rows in its group's committed state, by the documented filter
    (``table_name``, the slots of ``hashcdc.slots``), read by polars on delta-rs."""
    import polars as pl
    from deltalake import DeltaTable

    slots = recorded_slots(DeltaTable(str(state)).metadata().configuration)[member]
    frame = pl.read_delta(str(state)).filter(
        (pl.col("table_name") == member) & pl.col("operation").is_in(["I", "U", "N", "X"])
    )
    return {int(row[slots["id"]]): row[slots["name"]] for row in frame.iter_rows(named=True)}


def _rows(project: Any, env: dict[str, str], table: str = "killed") -> dict[int, str]:
    """``<table>_current`` read by ``hashcdc query`` (the engine's private warehouse)."""
    rows = query_rows(project.root, env, f"select id, name from {table}_current")
    return {int(id_): name for id_, name in rows}
