"""Which lock files a command on some tables takes (:func:`hashcdc.runtime.lock.locks_of`)."""

from __future__ import annotations

from hashcdc.config import TableConfig, parse_table_config
from hashcdc.runtime.lock import Locked, locks_of


def _table(name: str, group: str | None = None) -> TableConfig:
    config, problems = parse_table_config(
        {
            "name": name,
            "extract_type": "full",
            "source": f"landing/{name}/{{business_date}}.csv",
            "columns": [{"name": "id", "type": "int", "key": True}],
            **({"group": group} if group else {}),
        },
        f"tables/{name}.yml",
    )
    assert config is not None, problems
    return config


def test_a_groups_members_share_its_lock_and_a_table_of_its_own_has_one() -> None:
    configs = [_table("a", "crm"), _table("b", "crm"), _table("crm"), _table("c")]
    # Two members of crm are one lock; the table named crm is another (its own file).
    assert locks_of(["b", "a", "crm", "c"], configs) == [
        Locked("c"),
        Locked("crm"),
        Locked("crm", group=True),
    ]
    assert [lock.file for lock in locks_of(["a", "crm"], configs)] == [
        "crm.lock",
        "groups/crm.lock",
    ]
    assert [str(lock) for lock in locks_of(["a", "c"], configs)] == ["table 'c'", "group 'crm'"]
    # Without the configs, each name is a table of its own.
    assert locks_of(["a", "a"]) == [Locked("a")]
