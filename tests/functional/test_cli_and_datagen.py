"""The CLI's daily job, query output and the data generator, on the shared project."""

from __future__ import annotations

import csv
import io
from typing import Any

from hashcdc.cli import main
from hashcdc.codegen import datagen


def test_datagen_counts_are_exact_and_deterministic(project: Any, spark: Any) -> None:
    options = datagen.DatagenOptions(
        table_name="gen_small",
        initial_records=1000,
        incremental_records=1100,
        key_columns=2,
        non_key_columns=3,
        dates=["2020-01-01", "2020-01-02", "2020-01-03"],
        seed=7,
    )
    written = datagen.generate_extracts(spark, options, project.root)
    assert (project.root / "tables" / "gen_small.yml").exists()

    def day(date: str) -> Any:
        return spark.read.option("header", True).csv(
            str(project.root / f"landing/gen_small/{date}")
        )

    first, second = day("2020-01-01"), day("2020-01-02")
    assert first.count() == 1000 and second.count() == 1100
    keys = ["key_1", "key_2"]
    assert first.select(keys).distinct().count() == 1000
    kept = first.join(second, keys, "inner")
    assert kept.count() == 800  # 20% deleted
    unchanged = first.join(second, first.columns, "inner").count()
    assert unchanged == 400
    assert second.join(first, keys, "left_anti").count() == 300  # 200 replacements + 100 new

    before = sorted(map(tuple, second.collect()))
    again = datagen.generate_extracts(spark, options, project.root)
    assert again == written
    assert sorted(map(tuple, day("2020-01-02").collect())) == before


def test_cli_run_and_query(project: Any, capsys: Any) -> None:
    options = datagen.DatagenOptions(
        table_name="gen_cli", initial_records=200, dates=["2020-02-01", "2020-02-02"], seed=3
    )
    datagen.generate_extracts(project.spark, options, project.root)
    args = ["--project-dir", str(project.root)]
    assert main([*args, "generate"]) == 0
    for business_date in options.dates:
        assert main([*args, "run", "--date", business_date, "--select", "gen_cli"]) == 0
    capsys.readouterr()

    assert (
        main(
            [
                *args,
                "query",
                "select operation, count(*) as n from gen_cli_history "
                "where business_date = date'2020-02-02' group by operation order by operation",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert list(csv.reader(io.StringIO(out))) == [
        ["operation", "n"],
        ["D", "40"],
        ["I", "40"],
        ["U", "80"],
    ]


def test_cli_run_refuses_unknown_tables_and_stale_models(project: Any, capsys: Any) -> None:
    project.add_table(
        {
            "name": "gen_cli",
            "extract_type": "full",
            "source": {"path": "landing/gen_cli/{business_date}"},
            "columns": [{"name": "id", "type": "int", "key": True}],
        }
    )
    args = ["--project-dir", str(project.root)]
    assert main([*args, "run", "--date", "2020-02-03", "--select", "nope"]) == 2
    assert "unknown table(s) nope" in capsys.readouterr().err
    path = project.root / "tables" / "gen_cli.yml"
    original = path.read_text()
    try:
        path.write_text(original.replace("extract_type: full", "extract_type: delta"))
        assert main([*args, "run", "--date", "2020-02-03", "--select", "gen_cli"]) == 2
        assert "run `hashcdc generate` first" in capsys.readouterr().err
    finally:
        path.write_text(original)


def test_datagen_change_feed_gives_what_the_snapshots_give(project: Any, capsys: Any) -> None:
    """The same evolution as snapshots and as a messy Debezium feed: equal tables."""
    dates = ["2020-03-01", "2020-03-02"]
    common = {"initial_records": 300, "key_columns": 2, "non_key_columns": 2, "seed": 5}
    args = ["--project-dir", str(project.root)]
    assert (
        main(
            [
                *args,
                "datagen",
                "--table",
                "gen_snap",
                "--dates",
                *dates,
                "--initial-records",
                "300",
                "--key-columns",
                "2",
                "--non-key-columns",
                "2",
                "--seed",
                "5",
            ]
        )
        == 0
    )
    feed = datagen.DatagenOptions(
        table_name="gen_feed",
        dates=dates,
        extract_type="changes",
        redeliver=True,
        out_of_order=True,
        **common,
    )
    datagen.generate_extracts(project.spark, feed, project.root)
    second_day = sorted(p.name for p in (project.root / "landing/gen_feed" / dates[1]).iterdir())
    assert sum(name.startswith("part-") for name in second_day) == 3
    assert any(name.startswith("redelivered-2020-03-01-part-") for name in second_day)
    assert main([*args, "generate"]) == 0
    for business_date in dates:
        assert main([*args, "run", "--date", business_date]) == 0
    capsys.readouterr()

    columns = "key_1, key_2, value_1, value_2, keyhash, nonkeyhash, eff_start_date"
    for relation, extra in (("current", ""), ("history", ", operation, business_date")):
        feed_rows = project.rows(f"select {columns}{extra} from gen_feed_{relation}")
        snap_rows = project.rows(f"select {columns}{extra} from gen_snap_{relation}")
        assert sorted(map(repr, feed_rows)) == sorted(map(repr, snap_rows)), relation
    counts = project.rows(
        "select operation, count(*) as n from gen_feed_history "
        f"where business_date = date'{dates[1]}' group by operation order by operation"
    )
    assert counts == [
        {"operation": "D", "n": 60},
        {"operation": "I", "n": 60},
        {"operation": "U", "n": 120},
    ]
