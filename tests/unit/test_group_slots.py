"""Table groups without Spark: the slot map, the config's rules, the generated models."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hashcdc.codegen import generate
from hashcdc.config import load_table_configs, parse_table_config
from hashcdc.errors import ConfigError
from hashcdc.groups.evolution import member_shape_changes, moved_columns, recorded_slots
from hashcdc.groups.members import groups_of, stages_of
from hashcdc.groups.slots import place, slot_type
from hashcdc.runner.standing import excluded, fingerprints
from hashcdc.runtime.project import table_selector


def _member(name: str, columns: list[tuple[str, str]], **extra: object) -> dict[str, object]:
    return {
        "name": name,
        "extract_type": "full",
        "group": "crm",
        "source": f"landing/{name}/{{business_date}}",
        "columns": [
            {"name": column, "type": data_type, **({"key": True} if i == 0 else {})}
            for i, (column, data_type) in enumerate(columns)
        ],
        **extra,
    }


@pytest.mark.parametrize(
    ("data_type", "slot"),
    [
        ("int", "bigint"),
        ("smallint", "bigint"),
        ("bigint", "bigint"),
        ("float", "double"),
        ("varchar", "string"),
        ("decimal(10,2)", "decimal(38,2)"),
        ("decimal", "decimal(38,0)"),
        ("boolean", "boolean"),
        ("date", "date"),
        ("timestamp", "timestamp"),
    ],
)
def test_a_column_goes_on_the_slot_of_its_family(data_type: str, slot: str) -> None:
    assert slot_type(data_type) == slot


def test_members_share_slots_and_a_row_is_as_wide_as_the_widest_member() -> None:
    slots = place(
        [
            ("a", [("id", "int"), ("name", "string"), ("amount", "decimal(10,2)")]),
            ("b", [("k", "bigint"), ("x", "int"), ("y", "double"), ("z", "decimal(5,2)")]),
            ("c", [("code", "string"), ("label", "string")]),
        ]
    )
    assert slots.slot_names() == [
        "bigint_1", "bigint_2", "decimal_s2_1", "double_1", "string_1", "string_2",
    ]  # fmt: skip
    assert [(p.column, p.slot.name, p.data_type) for p in slots.of("b")] == [
        ("k", "bigint_1", "bigint"),
        ("x", "bigint_2", "int"),
        ("y", "double_1", "double"),
        ("z", "decimal_s2_1", "decimal(5,2)"),
    ]
    assert slots.as_property().startswith("a:id=bigint_1;a:name=string_1;a:amount=decimal_s2_1;")


def test_a_column_appended_to_a_member_moves_no_other_column() -> None:
    before = place([("a", [("id", "int"), ("name", "string")]), ("b", [("k", "string")])])
    after = place(
        [("a", [("id", "int"), ("name", "string"), ("nick", "string")]), ("b", [("k", "string")])]
    )
    assert set(before.as_property().split(";")) < set(after.as_property().split(";"))
    assert after.of("a")[2].slot.name == "string_2"


def test_a_member_named_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="named twice"):
        place([("a", [("id", "int")]), ("a", [("id", "int")])])


FEED = {
    "extract_type": "changes",
    "source": {"path": "landing/orders/{business_date}/*", "format": "debezium"},
    "changes": {"sequence_by": ["source.lsn"]},
}


@pytest.mark.parametrize(
    ("extra", "column", "key", "message"),
    [
        (FEED, {}, {"key": False}, "a change feed in a group has a key"),
        (
            {**FEED, "changes": {"sequence_by": ["source.lsn"], "history": "audit"}},
            {},
            {},
            "a change feed in a group keeps the net history",
        ),
    ],
)
def test_what_a_member_cannot_be_yet_is_named(
    extra: dict[str, object], column: dict[str, object], key: dict[str, object], message: str
) -> None:
    raw = _member("orders", [("id", "int"), ("amount", "double")], **extra)
    raw["columns"][1].update(column)  # type: ignore[index]
    raw["columns"][0].update(key)  # type: ignore[index]
    config, problems = parse_table_config(raw, "tables/orders.yml")
    assert config is None
    assert any(message in problem and "remove `group:`" in problem for problem in problems), (
        problems
    )


def test_the_feeds_of_a_group_share_their_order_and_transport(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    by_lsn = _member("orders", [("id", "int")], **FEED)
    by_commit = _member(
        "notes",
        [("id", "int")],
        **{**FEED, "changes": {"sequence_by": ["source.commit_lsn", "source.lsn"]}},
    )
    for raw in (by_lsn, by_commit):
        (tables / f"{raw['name']}.yml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(ConfigError, match="share one changes.sequence_by and one transport"):
        load_table_configs(tables)


def test_a_group_named_as_a_table_is_refused(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    for raw in (_member("crm", [("id", "int")]), _member("orders", [("id", "int")])):
        (tables / f"{raw['name']}.yml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(ConfigError, match="group 'crm' is also the name of a table"):
        load_table_configs(tables)


def test_a_group_generates_its_models_and_each_members_views(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    members = [
        _member("orders", [("id", "bigint"), ("amount", "decimal(10,2)")]),
        _member(
            "regions",
            [("code", "string"), ("label", "string")],
            max_delete_fraction=0.2,
            history_retention_days=30,
        ),
        _member("notes", [("id", "int")], enabled=False),
    ]
    for raw in members:
        (tables / f"{raw['name']}.yml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    configs = load_table_configs(tables)
    files = {str(f.path): f.content for f in generate.generated_files(configs)}
    assert sorted(p for p in files if p.startswith("python_models")) == [
        "python_models/crm_rejects.py", "python_models/stg_crm.py", "python_models/stg_crm.yml",
    ]  # fmt: skip
    for member in ("orders", "regions", "notes"):
        for view in ("current", "history", "scd2", "rejects"):
            assert f"models/crm/{member}/{member}_{view}.sql" in files
    state = files["models/crm/crm_state.sql"]
    # The paused member is not run: its rows are not read, so not deleted.
    assert "members={'orders': 0.5, 'regions': 0.2}" in state
    assert "hashcdc_group=true" in state
    # The delete guard's refusals are recorded after the MERGE, for the enabled members.
    assert "hashcdc.refuse_mass_deletes(this, {'orders': 0.5, 'regions': 0.2})" in state
    # Retention is each member's own; a member without one keeps every date.
    assert (
        "hashcdc.delete_expired_dates(this, {'regions': 30})" in files["models/crm/crm_history.sql"]
    )
    assert "delete_expired_dates" not in files["python_models/stg_crm.yml"]
    assert (
        "['amount', 'decimal_s2_1', 'decimal(10,2)']"
        in files["models/crm/orders/orders_current.sql"]
    )
    assert list(groups_of(configs)) == ["crm"]
    assert table_selector(["orders", "regions"], stages_of(configs)) == ["--select", "stg_crm+"]
    # The group's views carry one tag, which leaves them all out of a date's build with one
    # selector while they stand (a name each when some do not).
    views = sorted(fingerprints(configs))
    assert "crm_current" in views and "orders_scd2" in views
    for name, text in generate.group_views(configs).items():
        assert f"tags=['{generate.GROUP_VIEW_TAG}']" in text, name
    assert "tags=" not in files["models/crm/crm_state.sql"]
    assert excluded(views, views) == ["--exclude", f"tag:{generate.GROUP_VIEW_TAG}"]
    assert excluded(views[:2], views) == ["--exclude", *views[:2]]
    assert excluded([], views) == []
    # A standing seed is left out by name, beside the views' tag or names.
    assert excluded(sorted([*views, "rates"]), views) == [
        "--exclude", f"tag:{generate.GROUP_VIEW_TAG}", "rates"
    ]  # fmt: skip
    assert excluded(["rates", views[0]], views) == ["--exclude", views[0], "rates"]
    assert excluded(["rates"], views) == ["--exclude", "rates"]
    # No member keeps a changelog: the group has none.
    assert not any("changelog" in path for path in files)


def test_a_members_sensitive_columns_are_kept_in_the_groups_sensitive_tables(
    tmp_path: Path,
) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    people = _member(
        "people",
        [("id", "bigint"), ("city", "string"), ("email", "string"), ("born", "date")],
        sensitive_grants={"select": ["pii_readers"]},
    )
    for column in people["columns"][2:]:  # type: ignore[index]
        column["sensitive"] = True
    members = [people, _member("regions", [("code", "string"), ("label", "string")])]
    for raw in members:
        (tables / f"{raw['name']}.yml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    configs = load_table_configs(tables)
    group = groups_of(configs)["crm"]
    # The sensitive columns sit on slots of their own, never on the main state's.
    assert group.slot_map.slot_names() == ["bigint_1", "string_1", "string_2"]
    assert group.sensitive_slot_map.slot_names() == ["sensitive_date_1", "sensitive_string_1"]
    assert [p.slot.name for p in group.stage_slot_map.of("people")] == [
        "bigint_1", "string_1", "sensitive_string_1", "sensitive_date_1",
    ]  # fmt: skip
    assert group.stage_slot_map.of("regions") == group.slot_map.of("regions")
    files = {str(f.path): f.content for f in generate.generated_files(configs)}
    state = files["models/crm/crm_state.sql"]
    assert "sensitive" not in state.split("hashcdc.cdc_state(")[1]
    sensitive = files["models/crm/crm_sensitive_state.sql"]
    # Compared by its own hash, after the main state (whose refusals it follows), for the
    # members with sensitive columns only; no delete guard of its own.
    assert "hash_column='sensitive_hash'" in sensitive
    assert "depends_on: {{ ref('crm_state') }}" in sensitive
    assert "members={'people': 1.0}" in sensitive
    assert "refuse_mass_deletes" not in sensitive
    assert "'hashcdc.slots': 'people:email=sensitive_string_1;people:born=sensitive_date_1'" in (
        sensitive
    )
    for name in ("crm_sensitive_current", "crm_sensitive_history"):
        assert "ref('crm_sensitive_state')" in files[f"models/crm/{name}.sql"]
    view = files["models/crm/people/people_sensitive_current.sql"]
    assert "ref('crm_sensitive_current')" in view
    assert "['email', 'sensitive_string_1', 'string']" in view
    assert "grants={'select': ['pii_readers']}" in view
    assert "grants" not in files["models/crm/people/people_current.sql"]
    assert "ref('crm_sensitive_history')" in files["models/crm/people/people_sensitive_history.sql"]
    assert "models/crm/regions/regions_sensitive_current.sql" not in files
    assert "crm_sensitive_current" in fingerprints(configs)
    properties = yaml.safe_load(files["models/crm/_crm__models.yml"])
    described = {m["name"]: m for m in properties["models"]}
    assert [c["name"] for c in described["people_sensitive_current"]["columns"]][:2] == [
        "email", "born",
    ]  # fmt: skip
    assert "sensitive_hash" in files["python_models/stg_crm.yml"]


def test_a_members_changelog_is_its_view_of_the_groups(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    members = [
        _member("orders", [("id", "bigint"), ("amount", "decimal(10,2)")], changelog=True),
        _member("regions", [("code", "string")]),
    ]
    for raw in members:
        (tables / f"{raw['name']}.yml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    files = {str(f.path): f.content for f in generate.generated_files(load_table_configs(tables))}
    changelog = files["models/crm/crm_changelog.sql"]
    assert "members=['orders']" in changelog and "ref('crm_state')" in changelog
    view = files["models/crm/orders/orders_changelog.sql"]
    assert "hashcdc.member_images(" in view and "ref('crm_changelog')" in view
    assert "['amount', 'decimal_s2_1', 'decimal(10,2)']" in view
    assert "models/crm/regions/regions_changelog.sql" not in files


def test_a_members_added_column_is_a_shape_change_of_its_slot() -> None:
    properties = {
        "hashcdc.slots": "orders:id=bigint_1;orders:joined=timestamp_1;regions:code=string_1",
        "hashcdc.added.orders.joined": "2024-05-04",
        "hashcdc.added.notes.text": "2024-05-01",  # a member not run: left out
    }
    assert recorded_slots(properties) == {
        "orders": {"id": "bigint_1", "joined": "timestamp_1"},
        "regions": {"code": "string_1"},
    }
    assert member_shape_changes(properties, ["orders", "regions"]) == {
        "orders": {
            "compared": ["bigint_1", "timestamp_1"],
            "changed": {"timestamp_1": {"added": "2024-05-04"}},
        }
    }


def test_a_column_that_would_change_slots_is_named() -> None:
    slots = "orders:id=bigint_1;orders:a=string_1;orders:b=string_2;orders:p=decimal_s2_1"
    recorded = recorded_slots({"hashcdc.slots": slots})
    widened = place(
        [("orders", [("id", "bigint"), ("a", "string"), ("b", "string"), ("p", "decimal(12,2)")])]
    )
    assert moved_columns(recorded, widened, "orders") == []
    rescaled = place(
        [("orders", [("id", "int"), ("a", "string"), ("b", "string"), ("p", "decimal(12,3)")])]
    )
    assert [p.column for p in moved_columns(recorded, rescaled, "orders")] == ["p"]
    # A column taken out before another of its kind would move that one: named too.
    removed = place([("orders", [("id", "bigint"), ("b", "string"), ("p", "decimal(10,2)")])])
    assert [p.column for p in moved_columns(recorded, removed, "orders")] == ["b"]


def test_the_tables_of_a_group_share_one_extract_type(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    for raw in (
        _member("orders", [("id", "int")], extract_type="delta"),
        _member("regions", [("code", "string")]),
    ):
        (tables / f"{raw['name']}.yml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(ConfigError, match="share one extract_type"):
        load_table_configs(tables)
    (tables / "regions.yml").write_text(
        yaml.safe_dump(_member("regions", [("code", "string")], extract_type="delta")),
        encoding="utf-8",
    )
    configs = load_table_configs(tables)
    files = {str(f.path): f.content for f in generate.generated_files(configs)}
    assert "extract_type='delta'" in files["models/crm/crm_state.sql"]
    assert "untouched_operation='X'" in files["models/crm/crm_current.sql"]


def test_a_members_declared_changes_are_on_its_slots(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    orders = _member("orders", [("id", "bigint"), ("placed", "date"), ("note", "string")])
    orders["columns"][1]["removed"] = "2024-05-04"  # type: ignore[index]
    orders["columns"][2].update({"ignore": True})  # type: ignore[index]
    regions = _member("regions", [("code", "string"), ("title", "string")])
    regions["columns"][1]["renamed_from"] = ["label"]  # type: ignore[index]
    for raw in (orders, regions):
        (tables / f"{raw['name']}.yml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    state = {str(f.path): f.content for f in generate.generated_files(load_table_configs(tables))}[
        "models/crm/crm_state.sql"
    ]
    # The ignored column is not compared; the removed one's change is on its slot; the
    # renamed one keeps its hashes (its first name), so it is no shape change.
    assert (
        "member_shapes={'orders': {'compared': ['date_1'], "
        "'changed': {'date_1': {'removed': '2024-05-04'}}}}" in state
    ), state
    recorded = recorded_slots({"hashcdc.slots": "regions:code=string_1;regions:label=string_2"})
    renamed = place([("regions", [("code", "string"), ("title", "string")])])
    assert moved_columns(recorded, renamed, "regions", {"title": ("label",)}) == []
    # A column the state records as added joins the declared changes, unless not compared.
    properties = {
        "hashcdc.slots": "orders:id=bigint_1;orders:placed=date_1;orders:note=string_1",
        "hashcdc.added.orders.note": "2024-05-02",
    }
    declared = {"orders": {"compared": ["date_1"], "changed": {}}}
    assert member_shape_changes(properties, ["orders"], declared) == {}
