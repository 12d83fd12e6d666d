"""On a cluster: say when no executor comes, and report which executors did the work.

A Spark application whose executors no worker can host (more memory or cores than any
worker offers) waits forever, and Spark's own warning about it is a log line few see.
:func:`watch_executors` watches the driver from a daemon thread and prints, after
``HASHCDC_EXECUTOR_WAIT_SECONDS`` (20 by default) with work waiting and no executor, which
settings to change. :func:`executor_report` reads the driver's REST status API at the end
of a run: how many executors ran how many tasks.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request
from typing import Any

WAIT_SECONDS_VARIABLE = "HASHCDC_EXECUTOR_WAIT_SECONDS"
DEFAULT_WAIT_SECONDS = 20.0
# After the first warning, how often to repeat it while no executor has come.
REPEAT_SECONDS = 300.0
POLL_SECONDS = 2.0
# Settings that decide whether a worker can host an executor, with their variables.
EXECUTOR_SETTINGS = (
    ("spark.executor.memory", "HASHCDC_EXECUTOR_MEMORY"),
    ("spark.executor.cores", "HASHCDC_EXECUTOR_CORES"),
)

_WATCHED: set[str] = set()


def is_local(spark: Any) -> bool:
    """Whether the session runs its executors in the driver (``local[...]``)."""
    return str(spark.sparkContext.master).startswith("local")


def _executor_count(spark: Any) -> int:
    """Executors registered with the driver (the driver itself is not one)."""
    # pyspark's StatusTracker has no executor list: ask the JVM's.
    tracker = spark.sparkContext._jsc.sc().statusTracker()  # noqa: SLF001
    return max(0, len(tracker.getExecutorInfos()) - 1)


def _has_waiting_work(spark: Any) -> bool:
    return bool(spark.sparkContext.statusTracker().getActiveStageIds())


def no_executor_message(spark: Any, waited: float) -> str:
    """The warning: how long, on which master, and which settings to change."""
    conf = spark.sparkContext.getConf()
    asked = ", ".join(
        f"{key}={conf.get(key, 'unset')} ({variable})" for key, variable in EXECUTOR_SETTINGS
    )
    return (
        f"hashcdc: no Spark executor after {waited:.0f} s on {spark.sparkContext.master}; "
        f"Spark waits. Executors are asked with {asked}: if no worker offers that much memory "
        "and that many free cores, lower them or add workers (the master's web UI lists what "
        "each worker offers; docs/cluster.md)."
    )


def watch_executors(spark: Any) -> None:
    """Warn on stderr while a cluster application has work waiting and no executor.

    Does nothing on a local master; starts one daemon thread per application.
    """
    application = spark.sparkContext.applicationId
    if is_local(spark) or application in _WATCHED:
        return
    _WATCHED.add(application)
    wait = float(os.environ.get(WAIT_SECONDS_VARIABLE, DEFAULT_WAIT_SECONDS))

    def watch() -> None:
        waiting_since: float | None = None
        next_warning = wait
        while True:
            time.sleep(POLL_SECONDS)
            try:
                if _executor_count(spark) > 0:
                    waiting_since, next_warning = None, wait
                    continue
                if not _has_waiting_work(spark):
                    continue
            except Exception:  # noqa: BLE001 - py4j fails once the application has stopped
                return
            now = time.monotonic()
            waiting_since = waiting_since or now
            if now - waiting_since >= next_warning:
                print(no_executor_message(spark, now - waiting_since), file=sys.stderr)
                next_warning += REPEAT_SECONDS

    threading.Thread(target=watch, name="hashcdc-executor-watch", daemon=True).start()


def executors(spark: Any) -> list[dict[str, Any]]:
    """The application's executors (the driver left out), from Spark's REST status API.

    Empty when the session has no web UI (``spark.ui.enabled=false``), as on ``local``.
    """
    base = spark.sparkContext.uiWebUrl
    if not base:
        return []
    url = f"{base}/api/v1/applications/{spark.sparkContext.applicationId}/allexecutors"
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - the driver's own UI
        found = json.load(response)
    return [e for e in found if e.get("id") != "driver"]


def executor_report(spark: Any) -> str | None:
    """One line: how many executors ran tasks, and where; None on a local master."""
    if is_local(spark):
        return None
    try:
        found = executors(spark)
    except OSError as exc:
        return f"hashcdc: the executors' report is unavailable ({exc})"
    working = [e for e in found if e.get("totalTasks", 0) > 0]
    where = ", ".join(f"{e.get('hostPort')}: {e.get('totalTasks')} tasks" for e in working)
    return (
        f"hashcdc: {len(working)} of {len(found)} executor(s) ran tasks on "
        f"{spark.sparkContext.master}" + (f" ({where})" if where else "")
    )
