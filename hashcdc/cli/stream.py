"""``hashcdc stream``: change feeds applied as their events land (docs/streaming.md)."""

from __future__ import annotations

import argparse
import os
import signal
import threading

from hashcdc.cli.daily import _active_tables, ensure_generated, run_log_dir
from hashcdc.engine.server import stop_requested, writer_turn
from hashcdc.errors import HashcdcError
from hashcdc.runtime.project import find_project_dir, profile_output, spark_session


def cmd_stream(args: argparse.Namespace) -> int:
    """Apply the selected change feeds' landed events in micro-batches until stopped."""
    # deferred: Spark's modules load only for the commands that use them
    from hashcdc.pipeline.stream import Stream

    project_dir = find_project_dir(args.project_dir)
    configs = ensure_generated(project_dir, args.select or [])
    names = _active_tables(configs, args.select or [])
    snapshots = [t.name for t in configs if t.name in names and not t.is_feed]
    if snapshots and args.select:
        raise HashcdcError(
            f"table(s) {', '.join(snapshots)} are not change feeds (extract_type: changes): "
            "the stream applies change events; run them daily with `hashcdc run --date`"
        )
    tables = [t for t in configs if t.name in names and t.is_feed]
    if not tables:
        raise HashcdcError("no change feed (extract_type: changes) to stream")
    os.chdir(project_dir)
    spark = spark_session(project_dir, args.target)
    stop = threading.Event()
    stream = Stream(
        spark=spark,
        project_dir=project_dir,
        schema=profile_output(project_dir, args.target)["schema"],
        tables=tables,
        log_dir=run_log_dir(project_dir, "stream"),
        extra=("--target", args.target) if args.target else (),
        turn=writer_turn,
        stopping=lambda: stop.is_set() or stop_requested(),
        print=lambda line: print(line, flush=True),
        max_files=args.max_files,
        max_records=args.max_records,
        close_after=args.close_after,
    )
    if threading.current_thread() is not threading.main_thread():
        return stream.run(args.interval, once=args.once)
    # In a process of its own (--no-engine): a signal stops it at a batch's boundary.
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    for signum in previous:
        signal.signal(signum, lambda *_: stop.set())
    try:
        return stream.run(args.interval, once=args.once)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
