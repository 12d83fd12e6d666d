"""The ``hashcdc`` command: validate, check, generate, run, replay, status, report, drop, ….

Run it from the project folder, like dbt. Every user-facing failure is one message on
stderr and a non-zero exit status, never a stack trace.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

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
from hashcdc.cli.engine import cmd_dbt, cmd_engine, forward, served_by_engine
from hashcdc.cli.parser import build_parser
from hashcdc.cli.showcase import cmd_bench, cmd_datagen, cmd_demo
from hashcdc.cli.stream import cmd_stream
from hashcdc.cli.tables import cmd_compact, cmd_drop, cmd_report, cmd_status, cmd_upgrade
from hashcdc.errors import HashcdcError


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hashcdc`` console script.

    A command that opens the project's Spark session goes to the project's engine (one is
    started when none runs) unless ``--no-engine`` or ``HASHCDC_ENGINE=off``.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(words)
    if served_by_engine(args):
        try:
            return forward(args, words)
        except HashcdcError as exc:
            print(f"hashcdc: {exc}", file=sys.stderr)
            return 2
    return dispatch(args)


def run_in_engine(argv: Sequence[str]) -> int:
    """A command the engine was sent, run in the engine's process."""
    return dispatch(build_parser().parse_args(list(argv)), in_engine=True)


def dispatch(args: argparse.Namespace, in_engine: bool = False) -> int:
    """Run a parsed command here; a user-facing failure is one line and status 2."""
    handlers = {
        "validate": cmd_validate,
        "check": cmd_check,
        "status": cmd_status,
        "drop": cmd_drop,
        "init": cmd_init,
        "new": cmd_new,
        "setup": cmd_setup,
        "report": cmd_report,
        "docs": cmd_docs,
        "schema": cmd_schema,
        "generate": cmd_generate,
        "run": cmd_run,
        "replay": cmd_replay,
        "stream": cmd_stream,
        "upgrade": cmd_upgrade,
        "compact": cmd_compact,
        "query": cmd_query,
        "extract": cmd_extract,
        "capture": cmd_capture,
        "datagen": cmd_datagen,
        "bench": cmd_bench,
        "demo": cmd_demo,
        "dbt": cmd_dbt,
        "engine": lambda parsed: cmd_engine(parsed, run_in_engine),
    }
    try:
        return handlers[args.command](args)
    except HashcdcError as exc:
        print(f"hashcdc: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        if in_engine:  # the client went away: the engine's own output stays as it is
            return 0
        # Whoever read our output stopped early (`| head`): not a failure of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
