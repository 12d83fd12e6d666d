"""The ``hashcdc`` command's arguments: every subcommand, its options and their help."""

from __future__ import annotations

import argparse
from pathlib import Path

from hashcdc import __version__
from hashcdc.config import EXTRACT_TYPES
from hashcdc.dates import parse_business_date
from hashcdc.errors import HashcdcError


def _date(text: str) -> str:
    try:
        return parse_business_date(text)
    except HashcdcError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_table_options(parser: argparse.ArgumentParser) -> None:
    """Which tables (``--select``), on which profile target (``--target``)."""
    parser.add_argument("--select", nargs="+", metavar="TABLE", help="only these tables")
    parser.add_argument("--target", help="profile target (default: local)")


def _add_processing_options(parser: argparse.ArgumentParser) -> None:
    """The options that `run` and `replay` share: which tables, where, and mass deletes."""
    _add_table_options(parser)
    parser.add_argument(
        "--allow-mass-delete",
        action="store_true",
        help="accept full extracts that delete more than the table's max_delete_fraction",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hashcdc`` command."""
    parser = argparse.ArgumentParser(
        prog="hashcdc", description="Config-driven hash-diff CDC as a dbt project on Spark."
    )
    parser.add_argument(
        "--project-dir", type=Path, default=None, help="the project folder (default: .)"
    )
    parser.add_argument(
        "--no-engine",
        action="store_true",
        help="run in this process, not the project's engine (as HASHCDC_ENGINE=off does)",
    )
    parser.add_argument("--version", action="version", version=f"hashcdc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    setup = sub.add_parser(
        "setup",
        help="fetch Spark's JVM packages (Delta Lake, JDBC drivers, the Kafka source) from "
        "Maven Central once and build the driver's class archive (an installed hashcdc does "
        "the fetch on first use too)",
    )
    setup.add_argument(
        "--no-class-archive", action="store_true", help="fetch only (Spark starts slower)"
    )
    setup.add_argument(
        "--bench",
        action="store_true",
        help="also what `hashcdc bench` and the tests use: Iceberg, a Kafka broker",
    )

    sub.add_parser(
        "validate", help="check every tables/*.yml (listing every problem) and the models"
    )
    check = sub.add_parser(
        "check",
        help="before a run: configs, generated models, and each date's extract (present, "
        "readable, columns as configured), without running dbt",
    )
    check.add_argument("--date", nargs="+", type=_date, default=[], help="YYYY-MM-DD")
    _add_table_options(check)
    status = sub.add_parser("status", help="one line per table: last run, counts, lag")
    status.add_argument("--target", help="profile target (default: local)")
    drop = sub.add_parser(
        "drop", help="remove a table's config and models and, after confirmation, its data"
    )
    drop.add_argument("name")
    drop.add_argument("--yes", action="store_true", help="drop the data without asking")
    drop.add_argument("--keep-data", action="store_true", help="keep the tables and views")
    drop.add_argument("--target", help="profile target (default: local)")
    new = sub.add_parser(
        "new", help="create a project anywhere, with hashcdc's dbt half installed as a package"
    )
    new.add_argument("path", type=Path, help="the project's folder (created)")
    new.add_argument(
        "--package",
        help="the hashcdc dbt package: a checkout's path or a git URL (default: this one's)",
    )
    new.add_argument("--name", help="the dbt project's name (default: the folder's)")
    init = sub.add_parser("init", help="write tables/NAME.yml from a sample extract")
    init.add_argument("name")
    init.add_argument("--sample", required=True, type=Path, help="a CSV or parquet extract")
    init.add_argument("--delimiter", default=",", help="CSV delimiter (default ,)")
    init.add_argument("--force", action="store_true", help="overwrite tables/NAME.yml")
    report = sub.add_parser("report", help="one HTML page with charts of every run")
    report.add_argument("--out", type=Path, default=Path("target/report.html"))
    report.add_argument("--target", help="profile target (default: local)")
    docs = sub.add_parser("docs", help="generate dbt docs (one page); --serve to serve them")
    docs.add_argument("--serve", action="store_true")
    docs.add_argument("--port", type=int, default=8080)
    docs.add_argument("--target", help="profile target (default: local)")
    sub.add_parser("schema", help="print the JSON Schema of tables/<name>.yml (for editors)")

    gen = sub.add_parser("generate", help="write the model files of every table config")
    gen.add_argument("--check", action="store_true", help="only compare; exit 1 on drift")

    run = sub.add_parser("run", help="process business dates (dbt build per date)")
    run.add_argument(
        "--date",
        required=True,
        nargs="+",
        type=_date,
        help="business date(s), YYYY-MM-DD; several run in date order in one Spark session",
    )
    _add_processing_options(run)
    run.add_argument(
        "--profile",
        action="store_true",
        help="report time per dbt node and per Spark stage (target/hashcdc_profile.md)",
    )

    replay = sub.add_parser(
        "replay", help="recompute a date and every later processed date, in order"
    )
    replay.add_argument(
        "--from", dest="from_date", required=True, type=_date, help="first date, YYYY-MM-DD"
    )
    _add_processing_options(replay)

    stream = sub.add_parser(
        "stream",
        help="apply change feeds' events to their state as they land, in micro-batches, "
        "until stopped (SIGTERM or Ctrl-C: after the running batch)",
    )
    _add_table_options(stream)
    stream.add_argument(
        "--interval",
        type=float,
        default=1.0,
        help="seconds between two looks at the landing folders (default: 1)",
    )
    stream.add_argument("--once", action="store_true", help="apply what has landed, then stop")
    stream.add_argument(
        "--max-files",
        type=_positive,
        default=100,
        help="landed files a micro-batch reads at most; a backlog takes several (default: 100)",
    )
    stream.add_argument(
        "--max-records",
        type=_positive,
        default=1_000_000,
        help="records of a topic's partition a micro-batch reads at most (default: 1000000)",
    )
    stream.add_argument(
        "--close-after",
        type=float,
        metavar="MINUTES",
        help="close an open date itself this many minutes after its end (in the table's "
        "time zone), also when no later event came; default: when a later date's first "
        "events come, or by `hashcdc run --date`",
    )

    extract = sub.add_parser(
        "extract",
        help="read tables' snapshots from their database (source.database) and land them "
        "as the extracts of a business date",
    )
    extract.add_argument("tables", nargs="+", metavar="TABLE")
    extract.add_argument("--date", required=True, type=_date, help="business date YYYY-MM-DD")
    extract.add_argument(
        "--replace", action="store_true", help="land the date's extract again if it is there"
    )
    extract.add_argument("--target", help="profile target (default: local)")

    capture = sub.add_parser(
        "capture",
        help="stream the changes of tables (extract_type changes, source.database) from "
        "their database's log into the landing zone, after a first snapshot",
    )
    capture.add_argument("--select", nargs="+", metavar="TABLE", help="only these tables")
    capture.add_argument(
        "--check", action="store_true", help="test the connection and prerequisites, then exit"
    )
    pausing = capture.add_mutually_exclusive_group()
    pausing.add_argument(
        "--pause",
        nargs="+",
        metavar="TABLE",
        help="hold these tables' events (not landed for runs) until --resume, then exit",
    )
    pausing.add_argument(
        "--resume",
        nargs="+",
        metavar="TABLE",
        help="release these tables' held events into the business date capture resumes on",
    )
    capture.add_argument(
        "--once", action="store_true", help="capture up to the log's end at the start, then exit"
    )
    capture.add_argument(
        "--until",
        metavar="POSITION|TIME",
        help="stop before the first transaction committed at or after this log position "
        "(16/B374D848) or time (ISO, UTC if no offset)",
    )
    capture.add_argument(
        "--date",
        type=_date,
        help="land every event in this business date (batch: --once --date D, then run "
        "--date D); default: the date (UTC) each transaction committed",
    )
    capture.add_argument(
        "--roll-mib", type=float, default=64, help="land a file after this many MiB (64)"
    )
    capture.add_argument(
        "--roll-seconds", type=float, default=60, help="land a file after this many seconds (60)"
    )
    capture.add_argument(
        "--retry-seconds",
        type=float,
        default=300,
        help="retry a lost server this long, then stop with a message (300)",
    )

    query = sub.add_parser("query", help="run Spark SQL; CSV with a header on stdout")
    query.add_argument("sql")
    query.add_argument("--target", help="profile target (default: local)")
    query.add_argument(
        "--as-of",
        type=_date,
        metavar="DATE",
        help="read the tables as they were after this business date (the states' versions)",
    )

    gen_data = sub.add_parser("datagen", help="generate synthetic daily extracts + table config")
    gen_data.add_argument("--table", default="synthetic", help="table name")
    gen_data.add_argument("--initial-records", type=int, default=10_000)
    gen_data.add_argument("--incremental-records", type=int, default=None)
    gen_data.add_argument("--key-columns", type=int, default=5)
    gen_data.add_argument("--non-key-columns", type=int, default=10)
    gen_data.add_argument("--fraction-deleted", type=float, default=0.2)
    gen_data.add_argument("--fraction-updated", type=float, default=0.4)
    gen_data.add_argument("--fraction-unchanged", type=float, default=0.4)
    gen_data.add_argument(
        "--dates",
        nargs="+",
        type=_date,
        default=["2019-06-18", "2019-06-19"],
        help="business dates: the first gets the initial extract, each next one a change",
    )
    gen_data.add_argument(
        "--output",
        default="landing/{table}",
        help="output folder; one sub-folder per business date (default: landing/{table})",
    )
    gen_data.add_argument(
        "--extract-type",
        choices=EXTRACT_TYPES,
        default="full",
        help="delta: later dates hold only the new and updated rows; changes: Debezium JSON "
        "change events",
    )
    gen_data.add_argument(
        "--redeliver",
        action="store_true",
        help="changes: put the previous date's files into each date's folder again",
    )
    gen_data.add_argument(
        "--out-of-order",
        action="store_true",
        help="changes: shuffle each date's events over several files",
    )
    gen_data.add_argument("--seed", type=int, default=42)
    gen_data.add_argument("--target", help="profile target (default: local)")

    demo = sub.add_parser("demo", help="the article's example: 10,000 rows over 3 business dates")
    demo.add_argument(
        "--dates",
        type=_positive,
        choices=range(1, 4),
        default=3,
        metavar="N",
        help="run only the first N of its 3 dates (default 3)",
    )

    upgrade = sub.add_parser(
        "upgrade",
        help="bring an earlier release's tables to the current layout: Delta states, "
        "INT64 timestamps (history and versions kept)",
    )
    _add_table_options(upgrade)

    compact_parser = sub.add_parser(
        "compact",
        help="compact the states' and histories' files, apply their retention (OPTIMIZE, VACUUM)",
    )
    _add_table_options(compact_parser)

    bench_parser = sub.add_parser(
        "bench", help="benchmark the days of four cases against the copy floor and a peer"
    )
    bench_parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    bench_parser.add_argument(
        "--peer",
        choices=["dbt-duckdb", "dbt-spark"],
        action="append",
        default=None,
        help="also run a peer (a dbt snapshot on dbt-duckdb or dbt-spark) over the same files; "
        "repeat for both",
    )
    bench_parser.add_argument(
        "--end-to-end-max-rows",
        type=int,
        default=1_000_000,
        help="time `hashcdc run` of day 2 in its own process for sizes up to this many rows",
    )
    bench_parser.add_argument(
        "--week-days",
        type=int,
        default=7,
        help="uncompacted 1%% delta days before reading `current`, then compacting (0: skip)",
    )
    bench_parser.add_argument(
        "--skip-tests", action="store_true", help="do not run and time each date's dbt tests"
    )
    bench_parser.add_argument("--output", type=Path, default=Path("bench_output"))
    bench_parser.add_argument(
        "--report", type=Path, default=None, help="also write the markdown table here"
    )
    bench_parser.add_argument("--keep", action="store_true", help="keep the scratch project")
    bench_parser.add_argument(
        "--no-delta",
        action="store_true",
        help="skip the 1%% delta extract and change feed measurements",
    )
    bench_parser.add_argument(
        "--capture",
        metavar="TABLE",
        help="only `hashcdc capture` against the database of this captured table: snapshot "
        "and streaming rates for --rows rows (a bench table of its own there)",
    )
    bench_parser.add_argument(
        "--stream",
        action="store_true",
        help="only `hashcdc stream`: how far current trails a change feed landing --rate "
        "updates a second for --seconds, after --rows snapshot reads, beside a plain "
        "Structured Streaming foreachBatch MERGE on the same events",
    )
    bench_parser.add_argument(
        "--kafka",
        action="store_true",
        help="--stream: deliver the events as records of a Kafka topic (a broker the bench "
        "starts on 127.0.0.1) instead of files landed in a folder",
    )
    bench_parser.add_argument("--rate", type=int, default=1_000, help="--stream: updates/s")
    bench_parser.add_argument("--seconds", type=int, default=600, help="--stream: how long")
    bench_parser.add_argument(
        "--only-change-cost",
        action="store_true",
        help="only the cost-follows-the-change cases: the same 10,000 changed rows as a delta "
        "and reading `current` after --week-days uncompacted days",
    )
    bench_parser.add_argument(
        "--engine",
        action="store_true",
        help="only the commands' fixed cost with the engine: a 1,000-row date cold and warm, "
        "status and query warm, and the Spark jobs of a table-date",
    )
    bench_parser.add_argument(
        "--tables",
        type=int,
        default=0,
        metavar="N",
        help="only one date over N tables of 1,000 rows (day 1, then day 2 changing 4%%), "
        "each one `hashcdc run --date` through the engine, beside dbt-duckdb snapshots of "
        "the same tables",
    )
    bench_parser.add_argument(
        "--formats",
        action="store_true",
        help="only measure Delta Lake and Iceberg on the state's shape (a typical day's MERGE)",
    )
    engine = sub.add_parser(
        "engine",
        help="the project's warm engine, which serves the commands: start, stop, status",
    )
    engine.add_argument("action", choices=["start", "stop", "status", "serve"])
    engine.add_argument("--target", help="profile target (default: local)")
    engine.add_argument(
        "--idle-minutes",
        type=float,
        default=None,
        help="exit after this many minutes without a command (default: "
        "$HASHCDC_ENGINE_IDLE_MINUTES, else 30)",
    )
    engine.add_argument(
        "--foreground",
        action="store_true",
        help="start: serve in this process until stopped (a service manager's unit)",
    )

    dbt = sub.add_parser(
        "dbt",
        help="run a dbt command in the project's engine: hashcdc dbt build --select …",
    )
    dbt.add_argument("--target", help="profile target (default: local)")
    dbt.add_argument("arguments", nargs=argparse.REMAINDER, help="dbt's command and options")
    return parser
