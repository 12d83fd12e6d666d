"""What the stream reads of a landing folder, and how the stream bench counts lag (no Spark)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hashcdc.bench.stream import _file_lags, _percentiles
from hashcdc.config import TableConfig
from hashcdc.errors import HashcdcError
from hashcdc.pipeline.transports.files import landed_dates, next_files


def feed(path: str) -> TableConfig:
    return TableConfig.from_dict(
        {
            "name": "orders",
            "extract_type": "changes",
            "source": {"path": path, "format": "debezium"},
            "changes": {"sequence_by": ["source.lsn"]},
            "columns": [{"name": "id", "type": "int", "key": True}],
        }
    )


def test_each_date_folder_with_landed_files_and_their_signature(tmp_path: Path) -> None:
    landing = tmp_path / "landing" / "orders"
    for date, names in {
        "2024-06-01": ["a.json", "b.json", "_capturing-42.json", ".b.json.7"],
        "2024-06-02": ["_capturing-43.json"],  # only a capture's unfinished part
        "not-a-date": ["x.json"],
    }.items():
        (landing / date).mkdir(parents=True)
        for name in names:
            (landing / date / name).write_text("{}\n")
    found = landed_dates(feed("landing/orders/{business_date}/*"), tmp_path)
    assert list(found) == ["2024-06-01"]
    assert [Path(path).name for path, _, _ in found["2024-06-01"]] == ["a.json", "b.json"]

    # A file grown since: its signature changes, and it alone is read again.
    before = found["2024-06-01"]
    grown = landing / "2024-06-01" / "b.json"
    grown.write_text("{}\n{}\n")
    os.utime(grown, ns=(1, 2))
    after = landed_dates(feed("landing/orders/{business_date}/*"), tmp_path)["2024-06-01"]
    assert after != before and next_files(before, after, 100) == ([str(grown)], after)
    # All of them, the first landed first.
    in_landing_order = sorted(after, key=lambda entry: entry[2])
    assert next_files((), after, 100) == ([path for path, _, _ in in_landing_order], after)


def test_a_backlog_of_files_is_read_in_bounded_batches_in_landing_order() -> None:
    # Landed in the order 3, 0, 1, 2, 4 (a name that sorts later may land first).
    landed = tuple(
        (f"/l/2024-03-01/part-{n:03d}.json", 10, when) for n, when in enumerate([1, 2, 3, 0, 4])
    )
    read: tuple = ()
    batches = []
    while read != landed:
        files, read = next_files(read, landed, 2)
        batches.append([name.rsplit("-", 1)[1] for name in files])
    assert batches == [["003.json", "000.json"], ["001.json", "002.json"], ["004.json"]]
    # A file that grew is read again; one gone is forgotten.
    grown = (*landed[1:4], (landed[4][0], 20, 9))
    assert next_files(landed, grown, 2) == ([landed[4][0]], grown)


def test_a_landing_the_stream_cannot_watch_is_refused_with_its_reason(tmp_path: Path) -> None:
    with pytest.raises(HashcdcError, match="no \\{business_date\\}"):
        landed_dates(feed("landing/orders/*.json"), tmp_path)
    with pytest.raises(HashcdcError, match="local landing folder"):
        landed_dates(feed("s3a://bucket/orders/{business_date}/*"), tmp_path)


def test_a_file_is_visible_at_the_end_of_the_first_batch_that_holds_an_event_as_late() -> None:
    files = [("t", "f0", 1_000), ("t", "f1", 2_000), ("t", "f2", 9_000), ("u", "f0", 1_000)]
    # (table, end, newest event), ms: a table's file waits for a batch of its own table.
    batches = [("t", 1_500, 1_000), ("t", 4_000, 2_500), ("t", 3_000, 2_000), ("u", 5_000, 1_000)]
    assert _file_lags(files, batches) == [0.5, 1.0, 4.0]  # t's f2 never became visible
    assert _percentiles([0.5, 1.0, 3.0]) == {"p50_s": 1.0, "p99_s": 3.0, "max_s": 3.0}
