"""The ``hashcdc`` command: validate, check, generate, run, replay, status, report, drop, ….

Run it from the project folder, like dbt. Every user-facing failure is one message on
stderr and a non-zero exit status, never a stack trace. Its subcommands are one table
(:mod:`hashcdc.cli.commands`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hashcdc.cli.commands import build_parser, dispatch
from hashcdc.cli.engine import forward, served_by_engine
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
