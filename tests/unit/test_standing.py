"""Seeds that stand from date to date: their fingerprints follow what dbt loads them from."""

from __future__ import annotations

from pathlib import Path

from hashcdc.runner.standing import seed_fingerprints


def _project(root: Path) -> Path:
    (root / "seeds").mkdir(parents=True)
    (root / "dbt_project.yml").write_text("name: lake\nseed-paths: [seeds]\n")
    (root / "seeds" / "rates.csv").write_text("code,rate\nEUR,1.0\n")
    package = root / "dbt_packages" / "hashcdc"
    (package / "data").mkdir(parents=True)
    (package / "dbt_project.yml").write_text("name: hashcdc\nseed-paths: [data]\n")
    (package / "data" / "demo_counts.csv").write_text("table_name,row_count\nt,1\n")
    (package / "data" / "_seeds.yml").write_text("version: 2\n")
    return root


def test_a_seed_is_known_by_its_files(tmp_path: Path) -> None:
    project = _project(tmp_path)
    first = seed_fingerprints(project)
    # The project's seeds and its packages' (in their own seed-paths).
    assert sorted(first) == ["demo_counts", "rates"]
    assert seed_fingerprints(project) == first
    # A CSV edited: that seed only is loaded again.
    (project / "seeds" / "rates.csv").write_text("code,rate\nEUR,1.1\n")
    edited = seed_fingerprints(project)
    assert edited["rates"] != first["rates"] and edited["demo_counts"] == first["demo_counts"]
    # Its properties (column types) edited beside it: loaded again.
    (project / "dbt_packages" / "hashcdc" / "data" / "_seeds.yml").write_text(
        "version: 2\nseeds: [{name: demo_counts}]\n"
    )
    assert seed_fingerprints(project)["demo_counts"] != edited["demo_counts"]
    # The project's settings (a seed's config there): every seed again.
    (project / "dbt_project.yml").write_text("name: lake\nseed-paths: [seeds]\nvars: {a: 1}\n")
    again = seed_fingerprints(project)
    assert all(again[name] != edited[name] for name in edited)
