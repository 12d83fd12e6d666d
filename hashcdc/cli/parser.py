"""The ``hashcdc`` command's arguments: the global options, and a function per subcommand.

The subcommands, their help and handlers are the table of :mod:`hashcdc.cli.commands`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from hashcdc import __version__
from hashcdc.config import EXTRACT_TYPES
from hashcdc.dates import parse_business_date
from hashcdc.errors import HashcdcError


class Subcommand(Protocol):
    """What the parser takes of a subcommand (:class:`hashcdc.cli.commands.Command`)."""

    name: str
    help: str
    handler: Callable[[argparse.Namespace], int]
    arguments: Callable[[argparse.ArgumentParser], None]
    serving: Any


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


def build_parser(commands: Sequence[Subcommand]) -> argparse.ArgumentParser:
    """The argument parser of the ``hashcdc`` command, its subcommands from ``commands``.

    Each subcommand's parser gets the command as its ``handler`` and ``serving``
    (:mod:`hashcdc.cli.commands`, the one table of commands).
    """
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
    for command in commands:
        entry = sub.add_parser(command.name, help=command.help)
        command.arguments(entry)
        entry.set_defaults(handler=command.handler, serving=command.serving)
    return parser


def setup_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc setup`'s arguments."""
    parser.add_argument(
        "--no-class-archive", action="store_true", help="fetch only (Spark starts slower)"
    )
    parser.add_argument(
        "--bench",
        action="store_true",
        help="also what `hashcdc bench` and the tests use: Iceberg, a Kafka broker",
    )


def check_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc check`'s arguments."""
    parser.add_argument("--date", nargs="+", type=_date, default=[], help="YYYY-MM-DD")
    _add_table_options(parser)


def status_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc status`'s arguments."""
    parser.add_argument("--target", help="profile target (default: local)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1, naming the tables, when a table's service level (slo) did not hold "
        "over the last day or its latest run failed (for cron and monitoring hooks)",
    )


def drop_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc drop`'s arguments."""
    parser.add_argument("name")
    parser.add_argument("--yes", action="store_true", help="drop the data without asking")
    parser.add_argument("--keep-data", action="store_true", help="keep the tables and views")
    parser.add_argument("--target", help="profile target (default: local)")


def new_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc new`'s arguments."""
    parser.add_argument("path", type=Path, help="the project's folder (created)")
    parser.add_argument(
        "--package",
        help="the hashcdc dbt package: a checkout's path or a git URL (default: this one's)",
    )
    parser.add_argument("--name", help="the dbt project's name (default: the folder's)")


def init_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc init`'s arguments."""
    parser.add_argument("name")
    parser.add_argument("--sample", required=True, type=Path, help="a CSV or parquet extract")
    parser.add_argument("--delimiter", default=",", help="CSV delimiter (default ,)")
    parser.add_argument("--force", action="store_true", help="overwrite tables/NAME.yml")


def report_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc report`'s arguments."""
    parser.add_argument("--out", type=Path, default=Path("target/report.html"))
    parser.add_argument("--target", help="profile target (default: local)")


def docs_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc docs`'s arguments."""
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--target", help="profile target (default: local)")


def generate_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc generate`'s arguments."""
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on drift")


def run_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc run`'s arguments."""
    parser.add_argument(
        "--date",
        required=True,
        nargs="+",
        type=_date,
        help="business date(s), YYYY-MM-DD; several run in date order in one Spark session",
    )
    _add_processing_options(parser)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="report time per dbt node and per Spark stage (target/hashcdc_profile.md)",
    )


def replay_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc replay`'s arguments."""
    parser.add_argument(
        "--from", dest="from_date", required=True, type=_date, help="first date, YYYY-MM-DD"
    )
    _add_processing_options(parser)


def stream_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc stream`'s arguments."""
    _add_table_options(parser)
    parser.add_argument(
        "--interval",
        type=float,
        default=1.0,
        help="seconds between two looks at the landing folders (default: 1)",
    )
    parser.add_argument("--once", action="store_true", help="apply what has landed, then stop")
    parser.add_argument(
        "--max-files",
        type=_positive,
        default=100,
        help="landed files a micro-batch reads at most; a backlog takes several (default: 100)",
    )
    parser.add_argument(
        "--max-records",
        type=_positive,
        default=1_000_000,
        help="records of a topic's partition a micro-batch reads at most (default: 1000000)",
    )
    parser.add_argument(
        "--close-after",
        type=float,
        metavar="MINUTES",
        help="close an open date itself this many minutes after its end (in the table's "
        "time zone), also when no later event came; default: when a later date's first "
        "events come, or by `hashcdc run --date`",
    )
    parser.add_argument(
        "--metrics-port",
        type=_positive,
        metavar="PORT",
        help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics while it runs",
    )


def extract_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc extract`'s arguments."""
    parser.add_argument("tables", nargs="+", metavar="TABLE")
    parser.add_argument("--date", required=True, type=_date, help="business date YYYY-MM-DD")
    parser.add_argument(
        "--replace", action="store_true", help="land the date's extract again if it is there"
    )
    parser.add_argument("--target", help="profile target (default: local)")


def capture_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc capture`'s arguments."""
    parser.add_argument("--select", nargs="+", metavar="TABLE", help="only these tables")
    parser.add_argument(
        "--check", action="store_true", help="test the connection and prerequisites, then exit"
    )
    pausing = parser.add_mutually_exclusive_group()
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
    parser.add_argument(
        "--once", action="store_true", help="capture up to the log's end at the start, then exit"
    )
    parser.add_argument(
        "--until",
        metavar="POSITION|TIME",
        help="stop before the first transaction committed at or after this log position "
        "(16/B374D848) or time (ISO, UTC if no offset)",
    )
    parser.add_argument(
        "--date",
        type=_date,
        help="land every event in this business date (batch: --once --date D, then run "
        "--date D); default: the date (UTC) each transaction committed",
    )
    parser.add_argument(
        "--roll-mib", type=float, default=64, help="land a file after this many MiB (64)"
    )
    parser.add_argument(
        "--roll-seconds", type=float, default=60, help="land a file after this many seconds (60)"
    )
    parser.add_argument(
        "--retry-seconds",
        type=float,
        default=300,
        help="retry a lost server this long, then stop with a message (300)",
    )
    parser.add_argument(
        "--metrics-port",
        type=_positive,
        metavar="PORT",
        help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics while it runs",
    )


def query_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc query`'s arguments."""
    parser.add_argument("sql")
    parser.add_argument("--target", help="profile target (default: local)")
    parser.add_argument(
        "--as-of",
        type=_date,
        metavar="DATE",
        help="read the tables as they were after this business date (the states' versions)",
    )


def datagen_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc datagen`'s arguments."""
    parser.add_argument("--table", default="synthetic", help="table name")
    parser.add_argument("--initial-records", type=int, default=10_000)
    parser.add_argument("--incremental-records", type=int, default=None)
    parser.add_argument("--key-columns", type=int, default=5)
    parser.add_argument("--non-key-columns", type=int, default=10)
    parser.add_argument("--fraction-deleted", type=float, default=0.2)
    parser.add_argument("--fraction-updated", type=float, default=0.4)
    parser.add_argument("--fraction-unchanged", type=float, default=0.4)
    parser.add_argument(
        "--dates",
        nargs="+",
        type=_date,
        default=["2019-06-18", "2019-06-19"],
        help="business dates: the first gets the initial extract, each next one a change",
    )
    parser.add_argument(
        "--output",
        default="landing/{table}",
        help="output folder; one sub-folder per business date (default: landing/{table})",
    )
    parser.add_argument(
        "--extract-type",
        choices=EXTRACT_TYPES,
        default="full",
        help="delta: later dates hold only the new and updated rows; changes: Debezium JSON "
        "change events",
    )
    parser.add_argument(
        "--redeliver",
        action="store_true",
        help="changes: put the previous date's files into each date's folder again",
    )
    parser.add_argument(
        "--out-of-order",
        action="store_true",
        help="changes: shuffle each date's events over several files",
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--target", help="profile target (default: local)")


def demo_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc demo`'s arguments."""
    parser.add_argument(
        "--dates",
        type=_positive,
        choices=range(1, 4),
        default=3,
        metavar="N",
        help="run only the first N of its 3 dates (default 3)",
    )


def upgrade_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc upgrade`'s arguments."""
    _add_table_options(parser)


def compact_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc compact`'s arguments."""
    _add_table_options(parser)


def bench_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc bench`'s arguments."""
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument(
        "--peer",
        choices=["dbt-duckdb", "dbt-spark"],
        action="append",
        default=None,
        help="also run a peer (a dbt snapshot on dbt-duckdb or dbt-spark) over the same files; "
        "repeat for both",
    )
    parser.add_argument(
        "--end-to-end-max-rows",
        type=int,
        default=1_000_000,
        help="time `hashcdc run` of day 2 in its own process for sizes up to this many rows",
    )
    parser.add_argument(
        "--week-days",
        type=int,
        default=7,
        help="uncompacted 1%% delta days before reading `current`, then compacting (0: skip)",
    )
    parser.add_argument(
        "--skip-tests", action="store_true", help="do not run and time each date's dbt tests"
    )
    parser.add_argument("--output", type=Path, default=Path("bench_output"))
    parser.add_argument(
        "--report", type=Path, default=None, help="also write the markdown table here"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch project")
    parser.add_argument(
        "--no-delta",
        action="store_true",
        help="skip the 1%% delta extract and change feed measurements",
    )
    parser.add_argument(
        "--capture",
        metavar="TABLE",
        help="only `hashcdc capture` against the database of this captured table: snapshot "
        "and streaming rates for --rows rows (a bench table of its own there)",
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        help="only `hashcdc stream`: how far current trails a change feed landing --rate "
        "updates a second for --seconds, after --rows snapshot reads, beside a plain "
        "Structured Streaming foreachBatch MERGE on the same events",
    )
    parser.add_argument(
        "--kafka",
        action="store_true",
        help="--stream: deliver the events as records of a Kafka topic (a broker the bench "
        "starts on 127.0.0.1) instead of files landed in a folder",
    )
    parser.add_argument("--rate", type=int, default=1_000, help="--stream: updates/s")
    parser.add_argument("--seconds", type=int, default=600, help="--stream: how long")
    parser.add_argument(
        "--only-change-cost",
        action="store_true",
        help="only the cost-follows-the-change cases: the same 10,000 changed rows as a delta "
        "and reading `current` after --week-days uncompacted days",
    )
    parser.add_argument(
        "--engine",
        action="store_true",
        help="only the commands' fixed cost with the engine: a 1,000-row date cold and warm, "
        "status and query warm, and the Spark jobs of a table-date",
    )
    parser.add_argument(
        "--tables",
        type=int,
        default=0,
        metavar="N",
        help="only one date over N tables of 1,000 rows (day 1, then day 2 changing 4%%), "
        "each one `hashcdc run --date` through the engine, beside dbt-duckdb snapshots of "
        "the same tables (--peer dbt-spark: also dbt-spark snapshots of 20 of them, per "
        "table); with --stream: N change feeds in one table group, --rows and --rate spread "
        "over them",
    )
    parser.add_argument(
        "--group",
        action="store_true",
        help="with --tables: the N tables in one table group (group: bench)",
    )
    parser.add_argument(
        "--distinct",
        action="store_true",
        help="with --tables: each table's columns named its own (a column renamed in its "
        "config and its files), so no two tables of a group share one plan",
    )
    parser.add_argument(
        "--formats",
        action="store_true",
        help="only measure Delta Lake and Iceberg on the state's shape (a typical day's MERGE)",
    )


def engine_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc engine`'s arguments."""
    parser.add_argument("action", choices=["start", "stop", "status", "serve"])
    parser.add_argument("--target", help="profile target (default: local)")
    parser.add_argument(
        "--idle-minutes",
        type=float,
        default=None,
        help="exit after this many minutes without a command (default: "
        "$HASHCDC_ENGINE_IDLE_MINUTES, else 30)",
    )
    parser.add_argument(
        "--foreground",
        action="store_true",
        help="start: serve in this process until stopped (a service manager's unit)",
    )


def dbt_arguments(parser: argparse.ArgumentParser) -> None:
    """`hashcdc dbt`'s arguments."""
    parser.add_argument("--target", help="profile target (default: local)")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="dbt's command and options")
