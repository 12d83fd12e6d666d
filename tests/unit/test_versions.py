"""Unit tests of the state's log rules: which dates a Delta state holds, and since when it
was compacted (pure Python over ``describe history`` rows; the suite's Spark tests drive
the same rules through real tables)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hashcdc.state.maintenance import COMPACTED_THROUGH_PROPERTY, dates_since_compaction
from hashcdc.state.versions import (
    KEPT_SINCE_PROPERTY,
    RESTORES_KEY,
    DateVersion,
    _LogCache,
    applied_from_history,
    checksum_size,
    commit_metadata,
    local_location,
    newest_commit,
)


def date_commit(
    version: int, business_date: str, reset: bool = False, micro_batch: bool = False
) -> dict[str, Any]:
    return {
        "version": version,
        "operation": "MERGE",
        "userMetadata": commit_metadata(business_date, reset, micro_batch),
    }


def optimize(version: int) -> dict[str, Any]:
    return {"version": version, "operation": "OPTIMIZE", "userMetadata": None}


def set_property(version: int, name: str, value: str) -> dict[str, Any]:
    parameters = {"properties": json.dumps({name: value})}
    return {"version": version, "operation": "SET TBLPROPERTIES", "operationParameters": parameters}


def restore(version: int, to: int) -> dict[str, Any]:
    return {"version": version, "operation": "RESTORE", "operationParameters": {"version": to}}


def test_each_date_spans_the_commits_up_to_the_next_date() -> None:
    history = [date_commit(0, "2024-01-01"), optimize(1), date_commit(2, "2024-01-02")]
    assert applied_from_history(list(reversed(history))) == [
        DateVersion(0, "2024-01-01", 1),
        DateVersion(2, "2024-01-02", 2),
    ]


def test_a_restore_and_a_reset_undo_the_dates_after_them() -> None:
    restored = [date_commit(0, "2024-01-01"), date_commit(1, "2024-01-02"), restore(2, 0)]
    assert [a.business_date for a in applied_from_history(restored)] == ["2024-01-01"]
    reset = [*restored, date_commit(3, "2024-01-01", reset=True), date_commit(4, "2024-01-01")]
    assert applied_from_history(reset) == [DateVersion(4, "2024-01-01", 4)]


def member_commit(version: int, business_date: str, *members: str) -> dict[str, Any]:
    return {
        "version": version,
        "operation": "MERGE",
        "userMetadata": commit_metadata(business_date, members=members),
    }


def members_restore(version: int, **to: int) -> dict[str, Any]:
    metadata = json.dumps({RESTORES_KEY: to})
    return {"version": version, "operation": "WRITE", "userMetadata": metadata}


def test_a_group_members_dates_are_the_commits_that_name_it() -> None:
    # Day 1 and 2 of a and b; a's day 2 replayed alone (put back to version 0, applied
    # again), then b's day 2 rerun alone: b's date before is still version 0's day 1.
    history = [
        member_commit(0, "2024-01-01", "a", "b"),
        member_commit(1, "2024-01-02", "a", "b"),
        members_restore(2, a=0),
        member_commit(3, "2024-01-02", "a"),
    ]
    assert applied_from_history(history, "a") == [
        DateVersion(0, "2024-01-01", 2),
        DateVersion(3, "2024-01-02", 3),
    ]
    assert applied_from_history(history, "b") == [
        DateVersion(0, "2024-01-01", 0),
        DateVersion(1, "2024-01-02", 3),
    ]
    # Emptied (-1): the member's every date is undone, its siblings' are not.
    emptied = [*history, members_restore(4, b=-1)]
    assert applied_from_history(emptied, "b") == []
    assert [a.business_date for a in applied_from_history(emptied, "a")] == [
        "2024-01-01", "2024-01-02",
    ]  # fmt: skip
    # A commit without the list (an earlier release's) applies every member's date.
    assert [a.version for a in applied_from_history([date_commit(0, "2024-01-01")], "a")] == [0]


def test_a_groups_dates_are_in_date_order_the_latest_holding_the_table_as_it_is() -> None:
    # Group of a and b at days 1-3; x joined with its days 1-2, applied after them.
    history = [
        member_commit(0, "2024-01-01", "a", "b"),
        member_commit(1, "2024-01-02", "a", "b"),
        member_commit(2, "2024-01-03", "a", "b"),
        member_commit(3, "2024-01-01", "x"),
        member_commit(4, "2024-01-02", "x"),
        set_property(5, "hashcdc.slots", "…"),
    ]
    assert applied_from_history(history) == [
        DateVersion(0, "2024-01-01", 0),
        DateVersion(3, "2024-01-01", 3),
        DateVersion(1, "2024-01-02", 1),
        DateVersion(4, "2024-01-02", 5),
        # The group's latest date: the table as it is (x's rows too), not version 2.
        DateVersion(2, "2024-01-03", 5),
    ]
    assert [d.version for d in applied_from_history(history, "x")] == [3, 4]


def test_micro_batches_of_a_date_are_one_open_date_until_a_whole_date_run() -> None:
    batches = [
        date_commit(0, "2024-01-01"),
        date_commit(1, "2024-01-02", micro_batch=True),
        date_commit(2, "2024-01-02", micro_batch=True),
    ]
    assert applied_from_history(batches) == [
        DateVersion(0, "2024-01-01", 0),
        DateVersion(2, "2024-01-02", 2, is_open=True, first_version=1),
    ]
    # The date closed on top of its micro-batches: three commits, their net the date's.
    closed = [*batches, date_commit(3, "2024-01-02")]
    assert applied_from_history(closed)[-1] == DateVersion(3, "2024-01-02", 3, first_version=1)
    # Closed by a rerun that restored its micro-batches away: the date applied whole.
    rerun = [*batches, restore(3, 0), date_commit(4, "2024-01-02")]
    assert applied_from_history(rerun)[-1] == DateVersion(4, "2024-01-02", 4)
    # A later micro-batch of the same date opens it again, on top of the whole-date commit.
    reopened = [*rerun, date_commit(5, "2024-01-02", micro_batch=True)]
    assert applied_from_history(reopened)[-1] == DateVersion(
        5, "2024-01-02", 5, is_open=True, first_version=4
    )


def test_dates_since_compaction_ignore_a_compaction_restored_away() -> None:
    history = [date_commit(0, "2024-01-01"), date_commit(1, "2024-01-02"), optimize(2)]
    assert dates_since_compaction(history) == 0
    history.append(date_commit(3, "2024-01-03"))
    assert dates_since_compaction(history) == 1
    # A rerun of 2024-01-02 restores version 0: the compaction after it is undone too.
    rerun = [*history[:3], restore(3, 0), date_commit(4, "2024-01-02")]
    assert dates_since_compaction(rerun) == 2
    assert dates_since_compaction([]) == 0


def test_a_compaction_with_nothing_to_do_counts_through_its_record() -> None:
    # Delta's OPTIMIZE commits nothing on a compact table; hashcdc records it instead.
    history = [date_commit(0, "2024-01-01"), date_commit(1, "2024-01-02")]
    assert dates_since_compaction([*history, set_property(2, KEPT_SINCE_PROPERTY, "x")]) == 2
    recorded = [*history, set_property(2, COMPACTED_THROUGH_PROPERTY, "1")]
    assert dates_since_compaction(recorded) == 0
    assert dates_since_compaction([*recorded, date_commit(3, "2024-01-03")]) == 1
    assert dates_since_compaction([*recorded, restore(3, 1)]) == 2


def test_a_logs_newest_commit_is_its_highest_numbered_json(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    assert newest_commit(tmp_path) is None
    for name in ("00000000000000000000.json", "00000000000000000009.json"):
        (log / name).write_text("{}")
    (log / "00000000000000000010.checkpoint.parquet").write_text("")
    (log / "00000000000000000009.crc").write_text("")
    (log / "_last_checkpoint").write_text("")
    name, _, size = newest_commit(tmp_path) or ("", 0, 0)
    assert (name, size) == ("00000000000000000009.json", 2)
    assert newest_commit(tmp_path / "missing") is None


def test_only_local_locations_are_listed() -> None:
    assert local_location("file:/tmp/warehouse/a%20b") == Path("/tmp/warehouse/a b")
    assert local_location("file:///tmp/w/t") == Path("/tmp/w/t")
    assert local_location("/tmp/w/t") == Path("/tmp/w/t")
    assert local_location("s3a://bucket/w/t") is None
    assert local_location("hdfs://nn:8020/w/t") is None


def test_an_answer_is_kept_until_the_table_gains_a_commit(tmp_path: Path) -> None:
    cache = _LogCache()
    first = ("00000000000000000001.json", 1, 10)
    applied = [DateVersion(1, "2024-01-01", 1)]
    cache.put("s.t_state", tmp_path, first, applied)
    assert cache.location("s.t_state") == tmp_path
    assert cache.get("s.t_state", tmp_path, first) == applied
    # A new commit, an unreadable log or another location: read again (and forgotten).
    assert cache.get("s.t_state", tmp_path, ("00000000000000000002.json", 2, 10)) is None
    assert cache.get("s.t_state", tmp_path, first) is None
    cache.put("s.t_state", tmp_path, first, applied)
    assert cache.get("s.t_state", tmp_path, None) is None
    cache.put("s.t_state", tmp_path, first, applied)
    assert cache.get("s.t_state", tmp_path / "other", first) is None


def test_a_table_size_is_read_from_the_newest_commit_checksum(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / "00000000000000000000.json").write_text("{}\n")
    (log / "00000000000000000000.crc").write_text(json.dumps({"tableSizeBytes": 100}))
    assert checksum_size(tmp_path) == 100
    # The newest commit's checksum not written yet (or unreadable): no size from it.
    (log / "00000000000000000001.json").write_text("{}\n")
    assert checksum_size(tmp_path) is None
    (log / "00000000000000000001.crc").write_text("{not json")
    assert checksum_size(tmp_path) is None
    (log / "00000000000000000001.crc").write_text(json.dumps({"tableSizeBytes": 2048}))
    assert checksum_size(tmp_path) == 2048
    assert checksum_size(tmp_path / "missing") is None


def test_the_kept_answer_is_current_until_the_log_gains_a_commit(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / "00000000000000000000.json").write_text("{}\n")
    cache: _LogCache[str] = _LogCache()
    assert cache.current("s.t_state") is None
    mark = newest_commit(tmp_path)
    assert mark is not None
    cache.put("s.t_state", tmp_path, mark, ["read at version 0"])
    assert cache.current("s.t_state") == ["read at version 0"]
    (log / "00000000000000000001.json").write_text("{}\n")
    assert cache.current("s.t_state") is None
