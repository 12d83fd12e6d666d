"""How a dated dbt command is split into its parse and its run (no Spark, no dbt run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hashcdc.dates import parse_business_date
from hashcdc.errors import HashcdcError
from hashcdc.runtime.project import _date_invocations, dbt_args, run_vars
from hashcdc.state.maintenance import MIB, deletion_vectors_due


def test_the_date_is_a_var_of_the_command_and_not_of_its_parse(tmp_path: Path) -> None:
    args = dbt_args(
        "build",
        tmp_path,
        [*run_vars(replay=True), "--target", "shared", "--select", "stg_a+", "--log-path", "x"],
    )
    parse, command = _date_invocations(args, "2024-03-05")

    assert parse[:3] == ["parse", "--quiet", "--no-write-json"]
    # What shapes the manifest goes to the parse: the project, profile, target and the
    # other vars; the selection does not.
    assert parse[parse.index("--project-dir") + 1] == str(tmp_path)
    assert parse[parse.index("--target") + 1] == "shared"
    assert "--select" not in parse
    # The vars read only while the nodes run do not either: a change would parse anew.
    assert "--vars" not in parse

    assert command[0] == "build"
    assert command.count("--vars") == 1
    assert json.loads(command[command.index("--vars") + 1]) == {
        "hashcdc_replay": True,
        "business_date": "2024-03-05",
    }
    assert command[command.index("--select") + 1] == "stg_a+"


def test_a_micro_batchs_vars_are_the_commands_and_the_others_shape_the_parse(
    tmp_path: Path,
) -> None:
    batch = {"hashcdc_micro_batch": ["landing/a/f1.json"], "hashcdc_retries": 2}
    args = dbt_args("run", tmp_path, ["--vars", json.dumps({**batch, "hashcdc_buckets": 4})])
    parse, command = _date_invocations(args, "2024-03-05")
    assert json.loads(parse[parse.index("--vars") + 1]) == {"hashcdc_buckets": 4}
    assert json.loads(command[command.index("--vars") + 1]) == {
        **batch,
        "hashcdc_buckets": 4,
        "business_date": "2024-03-05",
    }


def test_a_command_without_other_vars_parses_without_any(tmp_path: Path) -> None:
    parse, command = _date_invocations(dbt_args("test", tmp_path), "2024-03-05")
    assert "--vars" not in parse
    assert json.loads(command[command.index("--vars") + 1]) == {"business_date": "2024-03-05"}


def test_a_given_var_date_is_replaced_by_the_commands(tmp_path: Path) -> None:
    args = dbt_args("build", tmp_path, ["--vars", "{business_date: '2024-01-01', k: 1}"])
    parse, command = _date_invocations(args, "2024-03-05")
    assert json.loads(parse[parse.index("--vars") + 1]) == {"k": 1}
    assert json.loads(command[command.index("--vars") + 1]) == {
        "business_date": "2024-03-05",
        "k": 1,
    }


@pytest.mark.parametrize("value", ["20240305", "2024-02-30", "2024-3-5", "", None])
def test_one_rule_refuses_what_is_not_a_calendar_date(value: object) -> None:
    with pytest.raises(HashcdcError, match="business_date"):
        parse_business_date(value)


@pytest.mark.parametrize(
    ("size_mib", "from_mib", "enabled", "due"),
    [
        (0.5, 32, False, False),  # a small state keeps them off
        (32, 32, False, True),  # the date that reaches the size switches them on
        (0, 0, False, True),  # 0: from the first date
        (100, 32, True, False),  # on already: nothing to do
    ],
)
def test_deletion_vectors_are_switched_on_by_size(
    size_mib: float, from_mib: float, enabled: bool, due: bool
) -> None:
    assert deletion_vectors_due(int(size_mib * MIB), from_mib, enabled) is due
