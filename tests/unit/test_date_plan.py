"""A table-date's plan, for each mode, from a command and a state's dates (no Spark).

The macros (through the adapter's ``hashcdc_date_plan``) and the stage read this plan; the
functional tests (reruns, replay, the stream's micro-batches and closes) drive the same
rules end to end.
"""

from __future__ import annotations

import pytest

from hashcdc.state.plan import DateCommand, Mode, PreviousState, plan_date
from hashcdc.state.versions import DateVersion

D1, D2, D3 = "2024-01-01", "2024-01-02", "2024-01-03"
# A state that holds D1 (versions 0-1: the date, then a compaction) and D2 (version 2).
HELD = [DateVersion(0, D1, 1), DateVersion(2, D2, 2)]


def never(version: int) -> bool:
    raise AssertionError(f"the shape at {version} was asked, and need not be")


def test_a_new_date_after_the_latest_is_daily_and_compares_with_the_latest_version() -> None:
    plan = plan_date(DateCommand(D3), HELD, never)
    assert plan.mode is Mode.DAILY
    assert plan.before == HELD[-1]
    assert plan.previous == PreviousState(D2, 2, 2)
    assert (plan.restores, plan.empties, plan.refusal) == (None, False, None)
    assert plan.prior_version == 2 and not plan.micro_batch and not plan.closes


def test_the_first_date_of_a_new_state_compares_with_nothing() -> None:
    plan = plan_date(DateCommand(D1), [], never)
    assert plan.mode is Mode.DAILY
    assert (plan.before, plan.previous, plan.restores, plan.empties) == (None, None, None, False)
    assert plan.prior_version is None and plan.refusal is None


def test_a_rerun_of_the_latest_date_restores_the_date_before_and_reads_the_table_so() -> None:
    plan = plan_date(DateCommand(D2), HELD, never)
    assert plan.mode is Mode.RERUN
    # Restored to the last version that holds D1 (the compaction after it), then read as
    # the restore leaves it: the columns and types of now.
    assert plan.restores == 1 and not plan.empties
    assert plan.previous == PreviousState(D1, 0, None)
    # A feed's stage reads the watermarks of the date before, at its own version.
    assert plan.prior_version == 1 and plan.refusal is None


def test_a_rerun_of_the_first_date_empties_the_state() -> None:
    plan = plan_date(DateCommand(D1), HELD[:1], never)
    assert plan.mode is Mode.RERUN
    assert plan.restores is None and plan.empties
    assert plan.previous is None and plan.prior_version is None


def test_an_older_date_is_refused_unless_replayed() -> None:
    refused = plan_date(
        DateCommand(
            D1,
        ),
        HELD,
        never,
        "orders",
    )
    assert refused.refusal is not None
    assert "table 'orders': business date 2024-01-01 is older than" in refused.refusal
    assert "hashcdc replay --from 2024-01-01" in refused.refusal

    replayed = plan_date(DateCommand(D1, replay=True), HELD, never, "orders")
    assert replayed.mode is Mode.REPLAY and replayed.refusal is None
    assert replayed.empties and replayed.restores is None


def test_a_replayed_date_with_a_date_before_restores_it() -> None:
    plan = plan_date(DateCommand(D2, replay=True), [*HELD, DateVersion(3, D3, 3)], never)
    assert plan.mode is Mode.REPLAY
    assert plan.restores == 1 and plan.previous == PreviousState(D1, 0, None)


def test_a_micro_batch_applies_on_top_of_the_dates_earlier_commits() -> None:
    open_d2 = [HELD[0], DateVersion(2, D2, 4, is_open=True, first_version=2)]
    plan = plan_date(DateCommand(D2, micro_batch=True), open_d2, never)
    assert plan.mode is Mode.MICRO_BATCH and plan.micro_batch
    assert plan.restores is None and not plan.empties
    # The diff reads the table as it is; the feed's watermarks are the date's latest.
    assert plan.previous == PreviousState(D1, 0, None)
    assert plan.prior_version == 4


def test_a_micro_batch_of_a_new_date_compares_with_the_date_before() -> None:
    plan = plan_date(DateCommand(D3, micro_batch=True, files=("a.json",)), HELD, never)
    assert plan.mode is Mode.MICRO_BATCH
    assert plan.previous == PreviousState(D2, 2, 2) and plan.prior_version == 2
    assert plan.command.files == ("a.json",)


def test_a_micro_batch_on_top_of_the_first_dates_compares_with_the_table_as_it_is() -> None:
    plan = plan_date(DateCommand(D1, micro_batch=True), [DateVersion(0, D1, 0, True)], never)
    assert plan.previous == PreviousState(None, None, None)
    assert plan.prior_version == 0 and plan.restores is None


def test_a_whole_date_run_of_an_open_date_closes_it_on_top() -> None:
    open_d2 = [HELD[0], DateVersion(2, D2, 4, is_open=True, first_version=2)]
    asked: list[int] = []

    def same(version: int) -> bool:
        asked.append(version)
        return True

    plan = plan_date(DateCommand(D2), open_d2, same)
    assert plan.mode is Mode.CLOSE and plan.closes and asked == [1]
    # Computed against the date before at its own version, merged on top: no restore.
    assert plan.restores is None and not plan.empties
    assert plan.previous == PreviousState(D1, 0, 1)


def test_an_open_date_with_a_column_added_since_the_date_before_is_rerun() -> None:
    open_d2 = [HELD[0], DateVersion(2, D2, 4, is_open=True, first_version=2)]
    plan = plan_date(DateCommand(D2), open_d2, lambda version: False)
    assert plan.mode is Mode.RERUN and plan.restores == 1
    assert plan.previous == PreviousState(D1, 0, None)


@pytest.mark.parametrize("replay", [False, True])
def test_a_replay_of_an_open_date_restores_it(replay: bool) -> None:
    open_d2 = [HELD[0], DateVersion(2, D2, 4, is_open=True)]
    plan = plan_date(DateCommand(D2, replay=replay), open_d2, lambda version: True)
    assert plan.closes is not replay
    assert (plan.restores == 1) is replay


def test_a_date_after_an_open_one_is_refused_with_how_to_close_it() -> None:
    open_d2 = [HELD[0], DateVersion(2, D2, 4, is_open=True)]
    plan = plan_date(DateCommand(D3), open_d2, never, "orders")
    assert plan.refusal is not None and "2024-01-02 was applied by `hashcdc stream`" in plan.refusal
    assert "hashcdc run --date 2024-01-02 --select orders" in plan.refusal
    # A micro-batch of the next date is the stream's: it closes the open date first.
    assert plan_date(DateCommand(D3, micro_batch=True), open_d2, never).refusal is not None


def test_the_macros_read_plain_values() -> None:
    document = plan_date(DateCommand(D2), HELD, never).to_macro()
    assert document["mode"] == "rerun" and document["restores"] == 1
    assert document["business_date"] == D2
    assert document["previous"] == {"business_date": D1, "version": 0, "last_version": None}
    assert document["before"]["last_version"] == 1 and document["micro_batch"] is False
    assert DateCommand.from_dict({"business_date": D2, "micro_batch": True, "files": ["f"]}) == (
        DateCommand(D2, micro_batch=True, files=("f",))
    )
