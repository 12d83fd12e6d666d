"""``hashcdc stream``: change feeds applied as their events land (docs/streaming.md)."""

from __future__ import annotations

import argparse
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hashcdc.config import TableConfig, load_table_configs
from hashcdc.config.model import DURATION
from hashcdc.engine.server import stop_requested, writer_turn
from hashcdc.errors import HashcdcError
from hashcdc.runner.preamble import prepare
from hashcdc.runtime.project import find_project_dir, profile_output
from hashcdc.runtime.retry import RETRY_FOR_DEFAULT, RETRY_FOR_VAR
from hashcdc.state.audit import project_vars


def feeds_only(
    args: argparse.Namespace,
) -> Callable[[list[TableConfig], list[str]], str]:
    """The stream's check of its tables before Spark starts: change feeds only, at least one."""

    def checked(configs: list[TableConfig], names: list[str]) -> str:
        snapshots = [t.name for t in configs if t.name in names and not t.is_feed]
        if snapshots and args.select:
            raise HashcdcError(
                f"table(s) {', '.join(snapshots)} are not change feeds (extract_type: "
                "changes): the stream applies change events; run them daily with "
                "`hashcdc run --date`"
            )
        if not any(t.is_feed for t in configs if t.name in names):
            raise HashcdcError("no change feed (extract_type: changes) to stream")
        return ""

    return checked


def _retry_for(project_dir: Path | None) -> str:
    """The project's ``hashcdc_retry_for`` (a duration), else the default."""
    value = project_vars(find_project_dir(project_dir)).get(RETRY_FOR_VAR) or RETRY_FOR_DEFAULT
    if not re.match(DURATION, str(value)):
        raise HashcdcError(
            f"the dbt var {RETRY_FOR_VAR} must be a duration like 30s, 5m, 2h or 1d, got "
            f"{value!r}: set it in dbt_project.yml"
        )
    return str(value)


def cmd_stream(args: argparse.Namespace) -> int:
    """Apply the selected change feeds' landed events in micro-batches until stopped."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.runner.stream import Stream
    from hashcdc.state.metrics import AuditCollector, served

    retry_for = _retry_for(args.project_dir)
    work = prepare(args.project_dir, args.select or [], args.target, "stream", feeds_only(args))
    tables = [t for t in work.configs if t.name in work.tables and t.is_feed]
    stop = threading.Event()
    stream = Stream(
        spark=work.spark,
        project_dir=work.project_dir,
        schema=profile_output(work.project_dir, args.target)["schema"],
        tables=tables,
        configs=work.configs,
        log_dir=work.log_dir,
        extra=("--target", args.target) if args.target else (),
        turn=writer_turn,
        stopping=lambda: stop.is_set() or stop_requested(),
        print=lambda line: print(line, flush=True),
        max_files=args.max_files,
        max_records=args.max_records,
        close_after=args.close_after,
        retry_for=retry_for,
    )
    collector = AuditCollector(
        work.spark, work.project_dir, lambda: load_table_configs(work.project_dir / "tables")
    )
    with served(args.metrics_port, [collector], "--metrics-port"):
        if threading.current_thread() is not threading.main_thread():
            return stream.run(args.interval, once=args.once)
        return _until_signalled(stream, args, stop)


def _until_signalled(stream: Any, args: argparse.Namespace, stop: threading.Event) -> int:
    """The stream in a process of its own (--no-engine): a signal stops it at a batch's end."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    for signum in previous:
        signal.signal(signum, lambda *_: stop.set())
    try:
        return int(stream.run(args.interval, once=args.once))
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
