"""Package seeds that stand from date to date: known by their files, unless a test reads them."""

from __future__ import annotations

from pathlib import Path

from hashcdc.config import TableConfig
from hashcdc.runner.standing import seed_fingerprints

COLUMNS = [{"name": "id", "type": "int", "key": True}, {"name": "v", "type": "string"}]


def _project(root: Path) -> Path:
    (root / "seeds").mkdir(parents=True)
    (root / "dbt_project.yml").write_text("name: lake\nseed-paths: [seeds]\n")
    (root / "seeds" / "rates.csv").write_text("code,rate\nEUR,1.0\n")
    package = root / "dbt_packages" / "hashcdc"
    (package / "data").mkdir(parents=True)
    (package / "dbt_project.yml").write_text("name: hashcdc\nseed-paths: [data]\n")
    (package / "data" / "demo_counts.csv").write_text("table_name,row_count\nt,1\n")
    (package / "data" / "other_counts.csv").write_text("table_name,row_count\nt,2\n")
    (package / "data" / "_seeds.yml").write_text("version: 2\n")
    return root


def _table(name: str, **settings: object) -> TableConfig:
    source = {"path": f"landing/{name}/{{business_date}}.csv"}
    return TableConfig.from_dict(
        {"name": name, "extract_type": "full", "source": source, "columns": COLUMNS, **settings}
    )


def test_a_package_seed_is_known_by_its_files(tmp_path: Path) -> None:
    project = _project(tmp_path)
    first = seed_fingerprints(project, [_table("t")])
    # The packages' seeds only: the project's own may be read by its own tests.
    assert sorted(first) == ["demo_counts", "other_counts"]
    assert seed_fingerprints(project, [_table("t")]) == first
    # A seed a table's expected counts are tested against is loaded with every date: dbt
    # would leave its test out with it.
    tested = seed_fingerprints(project, [_table("t", expected_counts_seed="demo_counts")])
    assert sorted(tested) == ["other_counts"]
    # A CSV edited: that seed only is loaded again.
    (project / "dbt_packages" / "hashcdc" / "data" / "demo_counts.csv").write_text("t,3\n")
    edited = seed_fingerprints(project, [])
    assert edited["demo_counts"] != first["demo_counts"]
    assert edited["other_counts"] == first["other_counts"]
    # The project's settings (a seed's config there): every seed again.
    (project / "dbt_project.yml").write_text("name: lake\nseed-paths: [seeds]\nvars: {a: 1}\n")
    again = seed_fingerprints(project, [])
    assert all(again[name] != edited[name] for name in edited)
    # Their properties (column types) edited beside them: loaded again.
    (project / "dbt_packages" / "hashcdc" / "data" / "_seeds.yml").write_text("version: 2\n\n")
    assert seed_fingerprints(project, [])["other_counts"] != again["other_counts"]
