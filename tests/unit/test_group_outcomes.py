"""Which members a group's date runs: refused ones, held ones and unselected ones are left out."""

from __future__ import annotations

from hashcdc.config import TableConfig
from hashcdc.groups import outcomes
from hashcdc.runner.dates import siblings_not_selected

MEMBERS = ["a", "b", "c"]


def test_a_refused_member_is_left_out_of_its_group_and_date_only() -> None:
    outcomes.start("g", "2024-01-01")
    outcomes.refuse("g", "2024-01-01", "b", "table 'b': no extract")
    assert outcomes.members_run("g", "2024-01-01", MEMBERS) == ["a", "c"]
    assert outcomes.refused("g", "2024-01-01") == {"b": "table 'b': no extract"}
    assert outcomes.members_run("g", "2024-01-02", MEMBERS) == MEMBERS
    assert outcomes.members_run("other", "2024-01-01", MEMBERS) == MEMBERS
    # The date's stage built again (a rerun) checks again: nothing is refused before it.
    outcomes.start("g", "2024-01-01")
    assert outcomes.members_run("g", "2024-01-01", MEMBERS) == MEMBERS


def test_held_members_are_left_out_inside_the_block_only() -> None:
    with outcomes.holding(["c", "not_a_member"]):
        assert outcomes.members_run("g", "2024-01-03", MEMBERS) == ["a", "b"]
        with outcomes.holding(["a", "c"]):
            assert outcomes.members_run("g", "2024-01-03", MEMBERS) == ["b"]
        # The inner block releases only what it held itself.
        assert outcomes.members_run("g", "2024-01-03", MEMBERS) == ["a", "b"]
    assert outcomes.members_run("g", "2024-01-03", MEMBERS) == MEMBERS


def _table(name: str, group: str | None) -> TableConfig:
    return TableConfig.from_dict(
        {
            "name": name,
            "extract_type": "full",
            "group": group,
            "source": f"landing/{name}/{{business_date}}",
            "columns": [{"name": "id", "type": "int", "key": True}],
        }
    )


def test_a_selected_member_holds_back_its_siblings_only() -> None:
    tables = [_table("a", "g"), _table("b", "g"), _table("c", "h"), _table("d", None)]
    assert siblings_not_selected(tables, ["a"]) == ["b"]
    assert siblings_not_selected(tables, ["a", "b", "d"]) == []
    assert siblings_not_selected(tables, ["d", "c"]) == []
    assert siblings_not_selected(tables, []) == []
