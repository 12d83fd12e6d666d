"""``hashcdc bench --tables N``: one date over many small tables, beside dbt-duckdb.

The shape of a database replicated table by table: N full-extract tables of 1,000 rows
(one ``hashcdc datagen`` table, its extracts and config copied under N names), day 2
changing 4% of each (3% updated, 1% deleted, 10 inserted). ``hashcdc run --date`` of day
1, then of day 2, each one command for all N tables through the project's engine (day 1
starts it), timed from start to exit as a user waits for them. Beside it, the
dbt-duckdb peer of the same N tables (:class:`hashcdc.bench.peer.DuckdbPeer`): per
date one ``dbt build`` of every load model and snapshot, a process timed from start to
exit. Both current tables of one table are counted at the end. ``--group``: the N tables
are one table group (``group: bench``): a date is one stage, one diff and one commit.
Copies alike are read by one plan of the group's stage; ``--distinct`` renames a column
of each copy (its config and its files' header), as tables of a database differ, so that
each is read by a plan of its own. ``--peer dbt-spark``: dbt-spark snapshots on Delta of
the first :data:`SPARK_PEER_TABLES` tables too (one ``dbt build`` a date; its figure is
per table, as hashcdc's: a table-date there costs seconds, the whole N would take hours).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from hashcdc.bench.engine import Commands, scratch_commands
from hashcdc.bench.peer import DuckdbPeer, PeerCase, SparkPeer

DATES = ("2024-01-01", "2024-01-02")
ROWS = 1_000
FIRST = "bench_t000"
GROUP = "bench"
# The tables the dbt-spark peer snapshots (the measurement took 20 of 100).
SPARK_PEER_TABLES = 20


def _names(count: int) -> list[str]:
    return [f"bench_t{number:03d}" for number in range(count)]


def _tables(
    commands: Commands, count: int, group: bool = False, distinct: bool = False
) -> list[PeerCase]:
    """The N tables' configs and extracts: one generated table copied under N names."""
    root = commands.root
    commands.timed(
        "datagen", "--table", FIRST, "--extract-type", "full",
        "--initial-records", str(ROWS), "--incremental-records", str(ROWS + 10),
        "--fraction-updated", "0.03", "--fraction-deleted", "0.01",
        "--fraction-unchanged", "0.96", "--dates", *DATES,
    )  # fmt: skip
    config_text = (root / "tables" / f"{FIRST}.yml").read_text()
    if group:
        config_text += f"group: {GROUP}\n"
        (root / "tables" / f"{FIRST}.yml").write_text(config_text)
    cases = [
        PeerCase(FIRST, "full", root / "landing" / FIRST, yaml.safe_load(config_text)["columns"])
    ]
    for name in _names(count)[1:]:
        shutil.copytree(root / "landing" / FIRST, root / "landing" / name)
        text = config_text.replace(FIRST, name)
        if distinct:
            text = _renamed(root / "landing" / name, text, name)
        (root / "tables" / f"{name}.yml").write_text(text)
        cases.append(
            PeerCase(name, "full", root / "landing" / name, yaml.safe_load(text)["columns"])
        )
    return cases


def _renamed(landing: Path, config_text: str, name: str) -> str:
    """A copy's config with its first column that is no key named after the table.

    The header of each of its files says the new name too; the values stay the same.
    """
    config = yaml.safe_load(config_text)
    column = next(c for c in config["columns"] if not c.get("key"))
    old, column["name"] = column["name"], f"{column['name']}_{name.rsplit('_', 1)[-1]}"
    for file in landing.rglob("*.csv"):
        header, _, rest = file.read_text(encoding="utf-8").partition("\n")
        fields = [column["name"] if f == old else f for f in header.split(",")]
        file.write_text(",".join(fields) + "\n" + rest, encoding="utf-8")
        file.with_name(f".{file.name}.crc").unlink(missing_ok=True)
    return yaml.safe_dump(config, sort_keys=False)


def run(
    project_dir: Path,
    output: Path,
    count: int,
    group: bool = False,
    distinct: bool = False,
    spark_peer: bool = False,
    keep: bool = False,
) -> dict[str, Any]:
    """Measure, print and return the figures (also ``<output>/bench_tables.json``).

    ``keep``: leave the scratch project (its dbt logs and run results) for a look after.
    """
    commands = scratch_commands(project_dir, output, "tables_work")
    root = commands.root
    figures: dict[str, Any] = {"tables": count, "rows": ROWS, "group": group, "distinct": distinct}
    kind = ("_group" if group else "") + ("_distinct" if distinct else "")
    result = output / f"bench_tables{kind}.json"

    def save() -> None:
        """Write what is measured so far: a long run's figures can be read as it goes."""
        result.write_text(json.dumps(figures, indent=2) + "\n")

    try:
        cases = _tables(commands, count, group, distinct)
        commands.timed("generate")
        commands.timed("engine", "stop")
        for day, business_date in enumerate(DATES, start=1):
            figures[f"day{day}_s"], _ = commands.timed("run", "--date", business_date)
            save()
        _, counted = commands.timed("query", f"select count(*) from {FIRST}_current")
        figures["current_rows"] = int(counted.strip().splitlines()[-1])
    finally:
        commands.timed("engine", "stop", check=False)
    peer = DuckdbPeer(root / "peer", cases)
    for day, business_date in enumerate(DATES, start=1):
        figures[f"peer_day{day}_s"] = peer.run_all(business_date)
        save()
    figures["peer_current_rows"] = peer.current_rows(FIRST, None)
    figures["peer_peak_rss_mib"] = round(peer.peak_rss_mib, 1)
    save()
    if spark_peer:
        _spark_peer(root, cases[:SPARK_PEER_TABLES], figures, save)
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return figures


def _spark_peer(
    root: Path, cases: list[PeerCase], figures: dict[str, Any], save: Callable[[], None]
) -> None:
    """dbt-spark snapshots on Delta of ``cases``, on the scratch project's Spark settings."""
    peer = SparkPeer.on_project(root / "spark_peer", cases, root)
    figures["spark_peer_tables"] = len(cases)
    for day, business_date in enumerate(DATES, start=1):
        figures[f"spark_peer_day{day}_s"] = peer.run_all(business_date)
        save()
    figures["spark_peer_current_rows"] = peer.current_rows_by_dbt(FIRST)
    figures["spark_peer_peak_rss_mib"] = round(peer.peak_rss_mib, 1)
    save()


def _per_table(figures: dict[str, Any], day: int) -> str:
    """A table-date's seconds: hashcdc's, the dbt-spark peer's and their ratio."""
    ours = figures[f"day{day}_s"] / figures["tables"]
    theirs = figures[f"spark_peer_day{day}_s"] / figures["spark_peer_tables"]
    return f"{ours:.2f} s | {theirs:.2f} s ({ours / theirs:.2f}×)"


def markdown(figures: dict[str, Any]) -> str:
    """The figures as a table, beside issue 44's target (day 2 ≤ the peer's)."""
    tables = f"{figures['tables']} tables of {figures['rows']:,} rows"
    if figures.get("group"):
        tables += " in one group"
    if figures.get("distinct"):
        tables += ", each of its own columns"
    rows = [
        (f"{tables}, day 1 (loads; a cold engine's start included)", figures["day1_s"],
         figures["peer_day1_s"], "—"),
        (f"{tables}, day 2 (4% changed)", figures["day2_s"], figures["peer_day2_s"],
         "≤ dbt-duckdb"),
    ]  # fmt: skip
    lines = ["| what | hashcdc | dbt-duckdb | target |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {what} | {ours} s | {peer} s | {target} |" for what, ours, peer, target in rows]
    lines.append(
        f"| current rows of {FIRST} | {figures['current_rows']:,} | "
        f"{figures['peer_current_rows']:,} | equal |"
    )
    if "spark_peer_tables" in figures:
        lines += [
            "",
            f"| a table-date (dbt-spark: {figures['spark_peer_tables']} of the tables, one "
            "`dbt build` a date) | hashcdc | dbt-spark | target |",
            "| --- | ---: | ---: | ---: |",
            f"| day 1 | {_per_table(figures, 1)} | — |",
            f"| day 2 | {_per_table(figures, 2)} | ≤ 0.1× dbt-spark |",
            f"| current rows of {FIRST} | {figures['current_rows']:,} | "
            f"{figures['spark_peer_current_rows']:,} | equal |",
        ]
    return "\n".join(lines) + "\n"
