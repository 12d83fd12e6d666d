"""A change feed read from a Kafka topic (``source.kafka``) by daily runs, broker started here.

Debezium envelopes are published as a connector would: one topic, keyed by the row key,
each record's timestamp a little after its commit. A date takes the events committed in
it; events of a later date already in the topic wait for it; an event of an earlier date
published after that date ran (late) is applied with the next date, once.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from hashcdc.cli import main

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
    """A topic published to as Debezium's JSON converter does (tombstones after deletes)."""

    def __init__(self, broker: Any, name: str) -> None:
        from confluent_kafka import Producer

        self.name = name
        self.producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

    def publish(self, key: int, value: str | None, committed: int, wrapped: bool = False) -> None:
        if value is not None and wrapped:
            value = json.dumps({"schema": {"type": "struct"}, "payload": json.loads(value)})
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
