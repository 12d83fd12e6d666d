"""The one table of the ``hashcdc`` command's subcommands: arguments, handler, where it runs.

A subcommand is one :class:`Command` here: its help line, the function that adds its
arguments (:mod:`hashcdc.cli.parser`), the handler that runs it, and whether the project's
engine serves it (:class:`hashcdc.cli.engine.Serving`: here, in this process; as a
writer, one at a time; as a reader beside a writer; as a stream that takes the writer's
turn for each of its steps). The parser, the dispatch and the engine's client all read it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hashcdc.cli import parser as arguments
from hashcdc.cli.capture import cmd_capture, cmd_extract
from hashcdc.cli.configs import (
    cmd_check,
    cmd_docs,
    cmd_generate,
    cmd_init,
    cmd_new,
    cmd_schema,
    cmd_setup,
    cmd_validate,
)
from hashcdc.cli.daily import cmd_query, cmd_replay, cmd_run
from hashcdc.cli.engine import Serving, cmd_dbt, cmd_engine
from hashcdc.cli.showcase import cmd_bench, cmd_datagen, cmd_demo
from hashcdc.cli.stream import cmd_stream
from hashcdc.cli.tables import cmd_compact, cmd_drop, cmd_report, cmd_status, cmd_upgrade
from hashcdc.errors import HashcdcError


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    del parser


@dataclass(frozen=True)
class Command:
    """One subcommand: its name and help, its arguments, its handler, where it runs."""

    name: str
    help: str
    handler: Callable[[argparse.Namespace], int]
    arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments
    serving: Serving = Serving.HERE


COMMANDS: tuple[Command, ...] = (
    Command(
        "setup",
        (
            "fetch Spark's JVM packages (Delta Lake, JDBC drivers, the Kafka source) from "
            "Maven Central once and build the driver's class archive (an installed hashcdc does "
            "the fetch on first use too)"
        ),
        cmd_setup,
        arguments.setup_arguments,
    ),
    Command(
        "validate",
        "check every tables/*.yml (listing every problem) and the models",
        cmd_validate,
    ),
    Command(
        "check",
        (
            "before a run: configs, generated models, and each date's extract (present, "
            "readable, columns as configured), without running dbt"
        ),
        cmd_check,
        arguments.check_arguments,
        Serving.WRITER,
    ),
    Command(
        "status",
        "one line per table: last run, counts, lag",
        cmd_status,
        arguments.status_arguments,
        Serving.READER,
    ),
    Command(
        "drop",
        "remove a table's config and models and, after confirmation, its data",
        cmd_drop,
        arguments.drop_arguments,
        Serving.WRITER,
    ),
    Command(
        "new",
        "create a project anywhere, with hashcdc's dbt half installed as a package",
        cmd_new,
        arguments.new_arguments,
    ),
    Command(
        "init",
        "write tables/NAME.yml from a sample extract",
        cmd_init,
        arguments.init_arguments,
    ),
    Command(
        "report",
        "one HTML page with charts of every run",
        cmd_report,
        arguments.report_arguments,
        Serving.WRITER,
    ),
    Command(
        "docs",
        "generate dbt docs (one page); --serve to serve them",
        cmd_docs,
        arguments.docs_arguments,
        Serving.WRITER,
    ),
    Command(
        "schema",
        "print the JSON Schema of tables/<name>.yml (for editors)",
        cmd_schema,
    ),
    Command(
        "generate",
        "write the model files of every table config",
        cmd_generate,
        arguments.generate_arguments,
    ),
    Command(
        "run",
        "process business dates (dbt build per date)",
        cmd_run,
        arguments.run_arguments,
        Serving.WRITER,
    ),
    Command(
        "replay",
        "recompute a date and every later processed date, in order",
        cmd_replay,
        arguments.replay_arguments,
        Serving.WRITER,
    ),
    Command(
        "stream",
        (
            "apply change feeds' events to their state as they land, in micro-batches, "
            "until stopped (SIGTERM or Ctrl-C: after the running batch)"
        ),
        cmd_stream,
        arguments.stream_arguments,
        Serving.STREAM,
    ),
    Command(
        "extract",
        (
            "read tables' snapshots from their database (source.database) and land them "
            "as the extracts of a business date"
        ),
        cmd_extract,
        arguments.extract_arguments,
        Serving.WRITER,
    ),
    Command(
        "capture",
        (
            "stream the changes of tables (extract_type changes, source.database) from "
            "their database's log into the landing zone, after a first snapshot"
        ),
        cmd_capture,
        arguments.capture_arguments,
    ),
    Command(
        "query",
        "run Spark SQL; CSV with a header on stdout",
        cmd_query,
        arguments.query_arguments,
        Serving.READER,
    ),
    Command(
        "datagen",
        "generate synthetic daily extracts + table config",
        cmd_datagen,
        arguments.datagen_arguments,
        Serving.WRITER,
    ),
    Command(
        "demo",
        "the article's example: 10,000 rows over 3 business dates",
        cmd_demo,
        arguments.demo_arguments,
        Serving.WRITER,
    ),
    Command(
        "upgrade",
        (
            "bring an earlier release's tables to the current layout: Delta states, "
            "INT64 timestamps (history and versions kept)"
        ),
        cmd_upgrade,
        arguments.upgrade_arguments,
        Serving.WRITER,
    ),
    Command(
        "compact",
        "compact the states' and histories' files, apply their retention (OPTIMIZE, VACUUM)",
        cmd_compact,
        arguments.compact_arguments,
        Serving.WRITER,
    ),
    Command(
        "bench",
        "benchmark the days of four cases against the copy floor and a peer",
        cmd_bench,
        arguments.bench_arguments,
    ),
    Command(
        "engine",
        "the project's warm engine, which serves the commands: start, stop, status",
        lambda parsed: cmd_engine(parsed, run_in_engine),
        arguments.engine_arguments,
    ),
    Command(
        "dbt",
        "run a dbt command in the project's engine: hashcdc dbt build --select …",
        cmd_dbt,
        arguments.dbt_arguments,
        Serving.WRITER,
    ),
)


def build_parser() -> argparse.ArgumentParser:
    """The ``hashcdc`` command's parser, from the table."""
    return arguments.build_parser(COMMANDS)


def run_in_engine(argv: Sequence[str]) -> int:
    """A command the engine was sent, run in the engine's process."""
    return dispatch(build_parser().parse_args(list(argv)), in_engine=True)


def dispatch(args: argparse.Namespace, in_engine: bool = False) -> int:
    """Run a parsed command here; a user-facing failure is one line and status 2."""
    try:
        return args.handler(args)
    except HashcdcError as exc:
        print(f"hashcdc: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        if in_engine:  # the client went away: the engine's own output stays as it is
            return 0
        # Whoever read our output stopped early (`| head`): not a failure of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
