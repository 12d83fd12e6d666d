"""What the stream reads of a landing folder, and how the stream bench counts lag (no Spark)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hashcdc.bench.stream import _file_lags, _percentiles
from hashcdc.config import TableConfig
from hashcdc.errors import HashcdcError
from hashcdc.pipeline.stream import _changed_files, landed_dates


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
    assert after != before and _changed_files(before, after) == [str(grown)]
    assert _changed_files((), after) == [path for path, _, _ in after]


def test_a_landing_the_stream_cannot_watch_is_refused_with_its_reason(tmp_path: Path) -> None:
    with pytest.raises(HashcdcError, match="no \\{business_date\\}"):
        landed_dates(feed("landing/orders/*.json"), tmp_path)
    with pytest.raises(HashcdcError, match="local landing folder"):
        landed_dates(feed("s3a://bucket/orders/{business_date}/*"), tmp_path)


def test_a_file_is_visible_at_the_end_of_the_first_batch_that_holds_an_event_as_late() -> None:
    files = [("f0", 1_000), ("f1", 2_000), ("f2", 9_000)]
    batches = [(1_500, 1_000), (4_000, 2_500), (3_000, 2_000)]  # (end, newest event), ms
    assert _file_lags(files, batches) == [0.5, 1.0]  # f2 never became visible
    assert _percentiles([0.5, 1.0, 3.0]) == {"p50_s": 1.0, "p99_s": 3.0, "max_s": 3.0}
