"""The markdown report of ``hashcdc bench``: side by side, the targets, per model.

Rendered from the figures :mod:`hashcdc.bench` saves (``bench.json``), so a report can be
made again from a run's file.
"""

from __future__ import annotations

from typing import Any

from hashcdc.bench.peer import PEERS

FIXED_CHANGES = 10_000  # the same changed rows at every size: cost follows the change
CASES = (
    # (label, the day's figure prefix: hashcdc's figures are <prefix>_run_s, a peer's
    # <peer>_<prefix>_s; copy floor figure or None)
    ("article's day 2 (20/40/40)", "day2", "day2_copy_floor_s"),
    ("typical day (full, 1% changed)", "day3", "day3_copy_floor_s"),
    ("1% delta, day 2", "delta_day2", None),
    ("1% change feed, day 2", "changes_day2", None),
    ("change feed, day 1 (snapshot reads)", "changes_day1", None),
)
# The prefix of each peer's figures in bench.json, by the peer's name.
PEER_FIGURES = {name: peer.figure_prefix for name, peer in PEERS.items()}


def _days_end_to_end(size: dict[str, Any], suffix: str) -> str:
    """Days 2 and 3 end to end (``suffix``: ``_no_engine`` or none), "—" where not run."""
    days = [size.get(f"end_to_end_day{day}{suffix}_s") for day in (2, 3)]
    return " / ".join("—" if seconds is None else str(seconds) for seconds in days)


def _ratio(numerator: Any, denominator: Any) -> str:
    if not isinstance(numerator, (int, float)) or not isinstance(denominator, (int, float)):
        return "—"
    return f"{numerator / denominator:.2f}" if denominator else "—"


def _targets(report: dict[str, Any]) -> list[str]:
    """The issue's targets against this run's figures (a line per target and size)."""
    sizes = {size["rows"]: size for size in report["sizes"] if "day2_run_s" in size}
    lines = ["| target | rows | measured | met? |", "| --- | ---: | --- | --- |"]

    def row(target: str, rows: int, measured: str, met: bool) -> None:
        lines.append(f"| {target} | {rows:,} | {measured} | {'yes' if met else 'no'} |")

    def against(peer: str, case: str, label: str, bound: float, rows: int, size: dict) -> None:
        ours, theirs = size.get(f"{case}_run_s"), size.get(f"{PEER_FIGURES[peer]}_{case}_s")
        if ours is None or theirs is None:
            return
        ratio = ours / theirs
        target = f"{label}: hashcdc ≤ {bound}× {peer}" if bound != 1 else f"{label} ≤ {peer}"
        row(target, rows, f"{ours} s vs {theirs} s: {ratio:.2f}×", ratio <= bound)

    largest = max(sizes) if sizes else 0
    for rows, size in sizes.items():
        for label, case, _ in CASES[:4]:
            against("dbt-spark", case, label, 0.33, rows, size)
        if rows == largest:
            for label, case, _ in CASES[:4]:
                against("dbt-duckdb", case, label, 1, rows, size)
            for label, case, _ in CASES[2:4]:
                against("dbt-duckdb", case, f"{label} (stretch)", 0.5, rows, size)
            against("dbt-duckdb", "changes_day1", CASES[4][0], 2, rows, size)
        ratio = size["day3_run_s"] / size["stage_compute_s"]
        row(
            "typical day ≤ 1.3× the hash stage alone",
            rows,
            f"{size['day3_run_s']} s vs {size['stage_compute_s']} s: {ratio:.2f}×",
            ratio <= 1.3,
        )
        for day, what in ((2, "article's day 2"), (3, "typical day (1% changed)")):
            ours, peer = size.get(f"end_to_end_day{day}_s"), size.get(f"peer_day{day}_s")
            if ours is None or peer is None:
                continue
            row(
                f"`hashcdc run` of the {what}, end to end (warm engine), ≤ 1.5× the "
                "dbt-duckdb peer's",
                rows,
                f"{ours} s vs {peer} s: {ours / peer:.2f}×",
                ours / peer <= 1.5,
            )
        written = size.get("day3_bytes_written", {}).get("<table>_state")
        if written is not None and size.get("state_bytes"):
            share = written / size["state_bytes"]
            row(
                "typical day writes ≤ 5% of the state's bytes",
                rows,
                f"{written / 2**20:.1f} of {size['state_bytes'] / 2**20:.1f} MiB: {share:.1%}",
                share <= 0.05,
            )
    for size in report["sizes"]:
        if "week_read_uncompacted" in size:
            for kind, label in (("count_s", "count"), ("filter_s", "filter on a key")):
                before = size["week_read_uncompacted"][kind]
                after = size["week_read_compacted"][kind]
                row(
                    f"reading `current` ({label}) after {size['week_days']} uncompacted days "
                    "≤ 1.3× after compaction",
                    size["rows"],
                    f"{before} s vs {after} s: {_ratio(before, after)}×",
                    after > 0 and before / after <= 1.3,
                )
    fixed = {
        s["rows"]: s["fixed_delta_day2_run_s"]
        for s in report["sizes"]
        if "fixed_delta_day2_run_s" in s
    }
    if len(fixed) > 1:
        small, large = min(fixed), max(fixed)
        ratio = fixed[large] / fixed[small]
        row(
            f"{FIXED_CHANGES:,} changed rows as a delta: at {large:,} ≤ 1.5× at {small:,}",
            large,
            f"{fixed[large]} s vs {fixed[small]} s: {ratio:.2f}×",
            ratio <= 1.5,
        )
    if sizes:
        peaks = report.get("peak_rss_mib", {})
        row(
            f"{largest:,} rows on the default driver heap (4g)",
            largest,
            f"driver memory {report['machine']['driver_memory']}; peak resident memory: "
            f"hashcdc's JVM {peaks.get('jvm')} MiB, dbt-duckdb {peaks.get('peer', '—')} MiB, "
            f"dbt-spark {peaks.get('spark_peer', '—')} MiB",
            report["machine"]["driver_memory"] == "4g",
        )
    return lines


def _peer_failure(size: dict[str, Any], peer: str, case: str) -> str | None:
    """Why a peer has no figure for ``case`` (its table's dates stopped at a failure)."""
    return size.get(f"{peer}_{case.rsplit('day', 1)[0]}failed")


def _peer_cell(size: dict[str, Any], peer: str, case: str) -> str:
    total = size.get(f"{peer}_{case}_s")
    if total is None:
        return "failed" if _peer_failure(size, peer, case) else "—"
    return f"{total} ({size[f'{peer}_{case}_load_s']} + {size[f'{peer}_{case}_snapshot_s']})"


def _has_daily_cases(size: dict[str, Any]) -> bool:
    """Whether this size ran the daily cases (not only ``--only-change-cost``)."""
    return "day2_run_s" in size


def markdown(report: dict[str, Any]) -> str:
    """The report of a run's figures (``bench.json``) as markdown."""
    machine = report["machine"]
    startup = report["startup_s"]
    peaks = report["peak_rss_mib"]
    lines = [
        "# Benchmarks",
        "",
        "Produced by `hashcdc bench` (not part of the tests), one run per figure, in seconds.",
        "**hashcdc** is `dbt run` of the table's models for the date in the bench's Spark "
        "session (dbt's parse included; tests apart). The **peers** are a dbt snapshot over "
        "the same files (`--peer dbt-duckdb --peer dbt-spark`): `dbt build` of a model "
        "loading the date's extract and `dbt snapshot` of it (check strategy, all columns; "
        "deleted keys invalidated), one process per date timed from start to exit (the load "
        "and snapshot nodes' own times in brackets). dbt-spark runs on the same Spark "
        "settings and Delta Lake as hashcdc, with its own metastore. The **copy floor** "
        "reads the same CSV and writes it once as parquet, in the bench's session.",
        "",
        f"Machine: {machine['cores']} cores, {machine['memory_gib']} GiB, {machine['cpu']}; "
        f"Spark {machine['spark']}, {machine['java']}, Python {machine['python']}; "
        f"driver memory {machine['driver_memory']}, shuffle partitions "
        f"{machine['shuffle_partitions']}. Peak resident memory: Spark's JVM "
        f"{peaks.get('jvm')} MiB, the bench's Python {peaks.get('python')} MiB; the peers' "
        f"largest dbt process (its JVM included): dbt-duckdb {peaks.get('peer', '—')} MiB, "
        f"dbt-spark {peaks.get('spark_peer', '—')} MiB.",
        "",
        "## Side by side",
        "",
        "| rows | case | hashcdc | tests | dbt-duckdb | dbt-spark | copy floor "
        "| ÷ dbt-duckdb | ÷ dbt-spark | ÷ floor |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in report["sizes"]:
        for label, case, floor in CASES:
            run = size.get(f"{case}_run_s")
            if run is None:
                continue
            floor_value = size.get(floor) if floor else None
            lines.append(
                f"| {size['rows']:,} | {label} | {run} | {size.get(f'{case}_tests_s', '—')} | "
                f"{_peer_cell(size, 'peer', case)} | {_peer_cell(size, 'spark_peer', case)} | "
                f"{floor_value or '—'} | {_ratio(run, size.get(f'peer_{case}_s'))} | "
                f"{_ratio(run, size.get(f'spark_peer_{case}_s'))} | {_ratio(run, floor_value)} |"
            )
    failures = [
        f"- {size['rows']:,} rows, {peer}: {message.splitlines()[0]}"
        for size in report["sizes"]
        for peer, prefix in PEER_FIGURES.items()
        for key, message in size.items()
        if key.startswith(f"{prefix}_") and key.endswith("failed")
    ]
    if failures:
        lines += ["", "Peers that failed (their figures stop there; the log in bench.json):", ""]
        lines += failures
    lines += ["", "## Against the targets", "", *_targets(report)]
    lines += [
        "",
        "## Fixed cost per run",
        "",
        f"Session start-up: JVM {startup['jvm']} s, metastore {startup['metastore']} s. "
        "dbt's parse: the first (full), for a new business date (the date is not a dbt var: "
        "partial parsing), and with the date as `--vars` (what dbt does then: parse it all "
        "again). Compile: `dbt compile` of the table's models (their guards' queries "
        "included). dbt overhead: a date's `dbt run` minus its models' own times (parse, "
        "metadata queries, hooks). End to end: `hashcdc run --date` of days 2 and 3 "
        "timed from start to exit, through the project's engine (started by day 1's run) "
        "and with `--no-engine` (a process of its own).",
        "",
        "| rows | parse (first) | parse (new date) | parse (`--vars`) | compile "
        "| dbt overhead (day 2) | tests (day 2) | end to end day 2 / 3: warm engine "
        "| no engine |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in filter(_has_daily_cases, report["sizes"]):
        overhead = round(size["day2_run_s"] - sum(size["day2_per_model_s"].values()), 2)
        lines.append(
            f"| {size['rows']:,} | {size['dbt_parse_full_s']} | {size['dbt_parse_new_date_s']} "
            f"| {size['dbt_parse_with_vars_s']} | {size['compile_s']} | {overhead} | "
            f"{size.get('day2_tests_s', '—')} | {_days_end_to_end(size, '')} | "
            f"{_days_end_to_end(size, '_no_engine')} |"
        )
    lines += [
        "",
        "End to end: `hashcdc run --date` of day 2 in a process of its own (a scratch "
        "project reading the same files), from the command's start to its exit: JVM, "
        "metastore, parse, models, tests and the summary.",
        "",
        "## Per model",
        "",
        "Seconds as dbt reports them for each case's day, and the bytes each model wrote "
        "(MiB; every file the date added under the table's folder: data files, deletion "
        "vectors, the Delta log). The hash stage alone is the typical day's extract read, "
        "cast and hashed into a `noop` sink (no write).",
        "",
    ]
    for size in filter(_has_daily_cases, report["sizes"]):
        models = list(size["day2_per_model_s"])
        lines += [
            f"**{size['rows']:,} rows** (CSV of day 2: {size['day2_csv_mib']} MiB; hash stage "
            f"alone {size['stage_compute_s']} s; state {size.get('state_bytes', 0) / 2**20:.1f} "
            f"MiB after the typical day; datagen {size['datagen_s']} s)",
            "",
            "| day | " + " | ".join(models) + " |",
            "| --- |" + " ---: |" * len(models),
        ]
        for label, case, _ in CASES:
            per_model = size.get(f"{case}_per_model_s")
            written = size.get(f"{case}_bytes_written", {})
            if per_model:
                cells = [
                    f"{per_model[m]} s / {written.get(m, 0) / 2**20:.1f} MiB"
                    if m in per_model
                    else "—"
                    for m in models
                ]
                lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Cost follows the change", ""]
    for size in report["sizes"]:
        if "fixed_delta_day2_run_s" in size:
            lines.append(
                f"- {size['rows']:,} rows: {FIXED_CHANGES:,} changed rows as a delta "
                f"{size['fixed_delta_day2_run_s']} s."
            )
        if "week_read_uncompacted" in size:
            before, after = size["week_read_uncompacted"], size["week_read_compacted"]
            lines.append(
                f"- {size['rows']:,} rows, `current` after {size['week_days']} uncompacted 1% "
                f"deltas ({size['week_state_files']} files in the state): count "
                f"{before['count_s']} s, filter on a key {before['filter_s']} s; "
                f"`hashcdc compact` {size['week_compact_s']} s, then count {after['count_s']} s, "
                f"filter {after['filter_s']} s."
            )
    lines.append("")
    return "\n".join(lines)
