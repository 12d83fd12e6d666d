"""The ``hashcdc`` command: validate, check, generate, run, replay, status, report, drop, ….

Run it from the project folder, like dbt. Every user-facing failure is one message on
stderr and a non-zero exit status, never a stack trace.
"""

from __future__ import annotations

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
    cmd_validate,
)
from hashcdc.cli.daily import cmd_query, cmd_replay, cmd_run
from hashcdc.cli.parser import build_parser
from hashcdc.cli.showcase import cmd_bench, cmd_datagen, cmd_demo
from hashcdc.cli.tables import cmd_compact, cmd_drop, cmd_report, cmd_status, cmd_upgrade
from hashcdc.errors import HashcdcError


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hashcdc`` console script."""
    args = build_parser().parse_args(argv)
    handlers = {
        "validate": cmd_validate,
        "check": cmd_check,
        "status": cmd_status,
        "drop": cmd_drop,
        "init": cmd_init,
        "new": cmd_new,
        "report": cmd_report,
        "docs": cmd_docs,
        "schema": cmd_schema,
        "generate": cmd_generate,
        "run": cmd_run,
        "replay": cmd_replay,
        "upgrade": cmd_upgrade,
        "compact": cmd_compact,
        "query": cmd_query,
        "extract": cmd_extract,
        "capture": cmd_capture,
        "datagen": cmd_datagen,
        "bench": cmd_bench,
        "demo": cmd_demo,
    }
    try:
        return handlers[args.command](args)
    except HashcdcError as exc:
        print(f"hashcdc: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # Whoever read our output stopped early (`| head`): not a failure of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
