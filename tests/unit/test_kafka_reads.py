"""A topic's reads as the pipeline keeps them, and the broker check before a date's read."""

from __future__ import annotations

import dataclasses
import socket

import pytest

from hashcdc.config import TableConfig, parse_table_config
from hashcdc.errors import InputDataError
from hashcdc.pipeline.transports.kafka import (
    ANY_DATE,
    SCHEME,
    TopicRead,
    check_reachable,
    date_start_ms,
    one_relation,
    spark_offsets,
)


def _table(servers: str) -> TableConfig:
    config, problems = parse_table_config(
        {
            "name": "people",
            "extract_type": "changes",
            "source": {
                "format": "debezium",
                "kafka": {"bootstrap_servers": servers, "topic": "shop.public.people"},
            },
            "changes": {"sequence_by": ["source.lsn"]},
            "columns": [{"name": "id", "type": "int", "key": True}],
        },
        "tables/people.yml",
    )
    assert problems == [] and config is not None
    return config


@pytest.mark.parametrize(
    "read",
    [
        TopicRead("shop.public.people", "2024-03-02"),
        TopicRead("shop.public.people", ANY_DATE, {0: 12, 3: 7}, None, 1_709_337_600_000),
        TopicRead("a.b", "2024-03-02", {0: 12}, {0: 40}),
    ],
)
def test_a_read_is_one_location_and_back(read: TopicRead) -> None:
    location = read.location()
    assert location.startswith(SCHEME)
    assert TopicRead.parse(location) == read


def test_a_date_is_read_from_its_start_less_the_clock_skew() -> None:
    table = _table("127.0.0.1:9092")
    assert date_start_ms(table, "2024-03-02") == 1_709_337_600_000 - 60_000


def test_no_broker_answering_is_one_line_naming_the_field() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(InputDataError) as refused:
        check_reachable(_table(f"127.0.0.1:{port}"), seconds=1)
    message = str(refused.value)
    assert f"no Kafka broker answers (127.0.0.1:{port}: " in message
    assert "source.kafka.bootstrap_servers in tables/people.yml" in message
    assert "Nothing was written" in message


def test_a_date_is_bounded_in_the_tables_time_zone() -> None:
    import datetime as dt

    from hashcdc.dates import date_bounds_ms, date_in_zone
    from hashcdc.pipeline.transports.kafka import date_end_ms

    table = _table("127.0.0.1:9092")
    zoned = dataclasses.replace(
        table, changes=dataclasses.replace(table.changes, time_zone="America/New_York")
    )
    # New York is five hours behind UTC in March until the 10th (EST), four after (EDT).
    assert date_start_ms(zoned, "2024-03-02") == 1_709_337_600_000 + 5 * 3_600_000 - 60_000
    assert date_end_ms(zoned, "2024-03-02") - date_end_ms(table, "2024-03-02") == 5 * 3_600_000
    start, end = date_bounds_ms("2024-03-10", "America/New_York")
    assert end - start == 23 * 3_600_000  # the clocks go forward that night
    committed = dt.datetime(2024, 3, 2, 2, 0, tzinfo=dt.UTC)
    assert date_in_zone(committed, "UTC") == "2024-03-02"
    assert date_in_zone(committed, "America/New_York") == "2024-03-01"
    assert date_in_zone(committed, "Asia/Tokyo") == "2024-03-02"


def test_reads_of_several_topics_are_one_relation_when_they_start_and_end_alike() -> None:
    batch = [
        TopicRead("a", "2024-05-01", {0: 1}, {0: 5}),
        TopicRead("b", "2024-05-01", {0: 0, 1: 2}, {0: 3, 1: 2}),
    ]
    window = [TopicRead("a", "2024-05-01"), TopicRead("b", "2024-05-01")]
    assert one_relation(batch) and one_relation(window)
    assert (
        spark_offsets({r.topic: r.start for r in batch}) == '{"a": {"0": 1}, "b": {"0": 0, "1": 2}}'
    )
    # A topic twice, one read to the end and one to offsets, or two dates' windows: not one.
    assert not one_relation([batch[0], TopicRead("a", "2024-05-01", {0: 5}, {0: 9})])
    assert not one_relation([batch[0], TopicRead("b", "2024-05-01", {0: 0}, None)])
    assert not one_relation([window[0], TopicRead("b", "2024-05-02")])
