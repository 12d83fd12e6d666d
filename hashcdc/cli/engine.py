"""The engine's commands (``hashcdc engine start|stop|status``) and ``hashcdc dbt``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from enum import StrEnum

from hashcdc.cli.daily import record_event_log
from hashcdc.config import TableConfig, load_table_configs
from hashcdc.engine import client
from hashcdc.engine.place import Place, engine_enabled, idle_minutes, settings_of
from hashcdc.errors import HashcdcError
from hashcdc.runtime.project import (
    dbt_args,
    find_project_dir,
    invoke_dbt,
    spark_session,
    stop_spark_and_wait,
)


class Serving(StrEnum):
    """Where a command runs (the table of commands, :mod:`hashcdc.cli.commands`)."""

    # In the client's own process: it opens no Spark session.
    HERE = "here"
    # In the project's engine, one writer at a time.
    WRITER = "writer"
    # In the engine, beside a writer: it only reads.
    READER = "reader"
    # In the engine, beside the others, taking the writer's turn for each of its steps.
    STREAM = "stream"


def served_by_engine(args: argparse.Namespace) -> bool:
    """Whether this command goes to the project's engine (not ``--no-engine``, not off)."""
    return args.serving is not Serving.HERE and not args.no_engine and engine_enabled()


def forward(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Send the command to the project's engine (started if none runs); its exit status."""
    project_dir = find_project_dir(args.project_dir)
    if args.command == "run" and args.profile:
        record_event_log(project_dir)  # before the settings an engine must fit are taken
    words = _without_project_dir(argv)
    serving = args.command == "docs" and args.serve
    if serving:
        # The engine generates the page; serving it, until Ctrl-C, is the client's own
        # (a static folder: it would hold the engine's writer turn for as long).
        words = [word for word in words if word != "--serve"]
    target = getattr(args, "target", None)
    arguments = ["--project-dir", str(project_dir), *words]
    status = client.forward(
        arguments,
        project_dir,
        target,
        args.serving is Serving.READER,
        streaming=args.serving is Serving.STREAM,
    )
    if status == 0 and serving:
        print(f"serving target/ on http://127.0.0.1:{args.port} (Ctrl-C stops)", flush=True)
        invoke_dbt(dbt_args("docs serve", project_dir, ["--port", str(args.port), "--no-browser"]))
    return status


def _without_project_dir(argv: Sequence[str]) -> list[str]:
    """``argv`` less its ``--project-dir`` (the engine gets the resolved folder)."""
    kept: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--project-dir":
            skip = True
        elif not word.startswith("--project-dir="):
            kept.append(word)
    return kept


def cmd_engine(args: argparse.Namespace, run_command: Callable[[Sequence[str]], int]) -> int:
    """``hashcdc engine start|stop|status`` (and ``serve``, what ``start`` runs)."""
    project_dir = find_project_dir(args.project_dir)
    place = Place.of(project_dir)
    if args.idle_minutes is not None:
        os.environ["HASHCDC_ENGINE_IDLE_MINUTES"] = f"{args.idle_minutes:g}"
    if args.action == "serve" or (args.action == "start" and args.foreground):
        return _serve(args, place, run_command)
    if args.action == "start":
        if client.status(place) is None:
            client.start(place, args.target)
        print(client.describe(client.status(place)))
        return 0
    if args.action == "stop":
        was_running = client.stop(place)
        print("hashcdc: engine stopped" if was_running else "hashcdc: no engine was running")
        return 0
    print(client.describe(client.status(place)))
    return 0


def _serve(
    args: argparse.Namespace, place: Place, run_command: Callable[[Sequence[str]], int]
) -> int:
    # deferred: the engine's server (and pyspark) load only in the engine's process
    from hashcdc.capture.status import CaptureCollector
    from hashcdc.cli.capture import CAPTURE_STATE_DIR
    from hashcdc.engine.server import Engine, log
    from hashcdc.state.audit import project_vars
    from hashcdc.state.metrics import PORT_VAR, AuditCollector, served

    if client.status(place) is not None:
        raise HashcdcError(
            f"an engine already serves {place.project_dir}: `hashcdc engine stop` first"
        )
    settings = settings_of(place.project_dir, args.target)
    os.chdir(place.project_dir)
    log(f"starting Spark for {place.project_dir}")
    spark = spark_session(place.project_dir, args.target)
    port = project_vars(place.project_dir).get(PORT_VAR)

    def tables() -> list[TableConfig]:
        return load_table_configs(place.project_dir / "tables")  # as they are at each scrape

    collectors = [
        AuditCollector(spark, place.project_dir, tables),
        CaptureCollector(tables, place.project_dir / CAPTURE_STATE_DIR),
    ]
    with served(int(port) if port else None, collectors, f"the dbt var {PORT_VAR}"):
        return Engine(place, settings, run_command, idle_minutes()).serve(stop_spark_and_wait)


def cmd_dbt(args: argparse.Namespace) -> int:
    """``hashcdc dbt …``: dbt in the engine's session (the project's folder and profiles)."""
    project_dir = find_project_dir(args.project_dir)
    os.chdir(project_dir)
    if not args.arguments:
        raise HashcdcError("hashcdc dbt needs a dbt command: hashcdc dbt build --select …")
    spark_session(project_dir, args.target)
    command, *rest = args.arguments
    target = ["--target", args.target] if args.target else []
    result = invoke_dbt(dbt_args(command, project_dir, [*rest, *target]))
    return 0 if result.success else 1
