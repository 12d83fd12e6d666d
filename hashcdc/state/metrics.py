"""Metrics a monitor scrapes: a Prometheus text endpoint on loopback.

The engine serves one when the project's var ``hashcdc_metrics_port`` is set; ``hashcdc
stream --metrics-port`` and ``hashcdc capture --metrics-port`` serve one for their run
(a stream or capture in a process of its own, under a service manager). Each scrape reads
the numbers from what hashcdc records (:class:`AuditCollector`: the audit, in two
queries, at most once per ``cache_seconds``; the stream's pauses; a capture's offsets,
:mod:`hashcdc.capture.status`), so they equal what ``hashcdc status`` shows and what a
query of ``cdc_runs`` returns. The names and labels are documented in docs/operations.md,
"Metrics".
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from hashcdc.config import TableConfig
from hashcdc.errors import HashcdcError
from hashcdc.state import audit, failures, service_levels

# The project var that makes the engine serve its metrics, on this loopback port.
PORT_VAR = "hashcdc_metrics_port"
LOOPBACK = "127.0.0.1"
# The audit's counts summed per table, command and status (one query a scrape).
_SUMS = (
    ("rows_in", "rows_in"),
    ("rejects", "rejects"),
    *((letter, column) for letter, column in audit.OPERATIONS if letter in "IUD"),
)


@contextmanager
def served(port: int | None, collectors: Sequence[Collector], setting: str) -> Iterator[None]:
    """Serve ``collectors`` on ``127.0.0.1:port`` for the block (``None``: nothing served).

    Raises
    ------
    HashcdcError
        When the port is taken, naming it and the ``setting`` that chose it.

    """
    if port is None:
        yield
        return
    registry = CollectorRegistry(auto_describe=False)
    for collector in collectors:
        registry.register(collector)
    try:
        server, thread = start_http_server(port, addr=LOOPBACK, registry=registry)
    except OSError as exc:
        raise HashcdcError(
            f"the metrics endpoint cannot listen on {LOOPBACK}:{port} ({exc.strerror or exc}): "
            f"another process holds the port (`ss -ltnp 'sport = :{port}'` names it); choose "
            f"another with {setting}"
        ) from exc
    print(f"hashcdc: metrics on http://{LOOPBACK}:{port}/metrics", flush=True)
    try:
        yield
    finally:
        server.shutdown()
        thread.join(5)


class AuditCollector(Collector):
    """Per-table metrics from the audit, the stream's pauses and the objectives.

    ``tables``: the project's table configs as they are now (read again each scrape).
    """

    def __init__(
        self,
        spark: Any,
        project_dir: Path,
        tables: Callable[[], list[TableConfig]],
        cache_seconds: float = 5.0,
    ) -> None:
        self.spark = spark
        self.project_dir = project_dir
        self.tables = tables
        self.cache_seconds = cache_seconds
        self._cached: tuple[float, list[Metric]] | None = None
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        """The metrics, read again when the last read is older than ``cache_seconds``."""
        with self._lock:
            now = time.monotonic()
            if self._cached is None or now - self._cached[0] > self.cache_seconds:
                self._cached = (now, list(self._read()))
            yield from self._cached[1]

    def _read(self) -> Iterable[Metric]:
        table = audit.audit_table(self.project_dir)
        tables = self.tables()
        yield from audit_metrics(self.spark, table)
        local_now = dt.datetime.now()
        oldest = max(span for _, span in service_levels.WINDOWS)
        samples = service_levels.audit_samples(self.spark, table, local_now - oldest)
        yield from level_metrics(tables, samples, service_levels.project_default(
            self.project_dir), local_now)  # fmt: skip
        paused = GaugeMetricFamily(
            "hashcdc_stream_paused",
            "1 when the stream paused the table (its retries ran out, or a failure that does "
            "not pass by itself); 0 otherwise",
            labels=["table"],
        )
        stops = failures.stream_stops(self.project_dir)
        for config in tables:
            paused.add_metric([config.name], 1.0 if config.name in stops else 0.0)
        yield paused


def audit_metrics(spark: Any, table: str) -> Iterable[Metric]:
    """The audit's runs and counts per table, command and status (one query)."""
    runs = CounterMetricFamily(
        "hashcdc_runs",
        "Runs in the audit: command run is a stream's micro-batch, build a date; status "
        "success, warn, error or skipped",
        labels=["table", "command", "status"],
    )
    rows_in = CounterMetricFamily(
        "hashcdc_rows_in",
        "Rows (a feed's events) read by the successful runs",
        labels=["table", "command"],
    )
    rejects = CounterMetricFamily(
        "hashcdc_rows_rejected",
        "Rows quarantined by the successful runs (<table>_rejects)",
        labels=["table", "command"],
    )
    changed = CounterMetricFamily(
        "hashcdc_rows_changed",
        "Rows inserted (I), updated (U) and deleted (D) by the successful runs",
        labels=["table", "command", "operation"],
    )
    retries = CounterMetricFamily(
        "hashcdc_retries",
        "Transient failures the stream retried before a run went through",
        labels=["table"],
    )
    if spark.catalog.tableExists(table):
        retried = "retries" if "retries" in audit.columns_of(spark, table) else "0"
        sums = ", ".join(f"coalesce(sum({column}), 0) as {column}" for _, column in _SUMS)
        found = spark.sql(
            f"select table_name, command, status, count(*) as runs, {sums}, "
            f"coalesce(sum({retried}), 0) as retries from {table} "
            "group by table_name, command, status"
        ).collect()
        retried_by: dict[str, float] = {}
        succeeded: dict[tuple[str, str], dict[str, float]] = {}
        for row in found:
            runs.add_metric([row.table_name, row.command, row.status], row.runs)
            retried_by[row.table_name] = retried_by.get(row.table_name, 0) + row.retries
            if row.status in service_levels.SUCCEEDED:
                sums_of = succeeded.setdefault((row.table_name, row.command), {})
                for _, column in _SUMS:
                    sums_of[column] = sums_of.get(column, 0) + row[column]
        for (name, command), sums_of in sorted(succeeded.items()):
            rows_in.add_metric([name, command], sums_of["rows_in"])
            rejects.add_metric([name, command], sums_of["rejects"])
            for letter, column in _SUMS[2:]:
                changed.add_metric([name, command, letter], sums_of[column])
        for name, count in sorted(retried_by.items()):
            retries.add_metric([name], count)
    yield from (runs, rows_in, rejects, changed, retries)


def level_metrics(
    tables: Sequence[TableConfig],
    rows: Sequence[dict[str, Any]],
    project_default: Any,
    now: dt.datetime,
) -> Iterable[Metric]:
    """Each table's latest lag and, with an objective, its attainment per window."""
    lag = GaugeMetricFamily(
        "hashcdc_lag_seconds",
        "The latest sample's lag: a micro-batch's oldest event's source commit to the batch's "
        "end, or a date's end to its first commit (service levels' samples, the last 7 days)",
        labels=["table"],
    )
    objective_seconds = GaugeMetricFamily(
        "hashcdc_slo_within_seconds", "The table's service-level objective", labels=["table"]
    )
    objective_ratio = GaugeMetricFamily(
        "hashcdc_slo_objective_ratio",
        "The share of samples the objective asks to be within it",
        labels=["table"],
    )
    attained = GaugeMetricFamily(
        "hashcdc_slo_attainment_ratio",
        "The share of the window's samples within the objective (absent: no sample)",
        labels=["table", "window"],
    )
    for table in tables:
        samples = service_levels.table_samples(table, rows)
        if samples:
            lag.add_metric([table.name], samples[-1].seconds)
        objective = service_levels.objective_of(table, project_default)
        if objective is None:
            continue
        objective_seconds.add_metric([table.name], objective.seconds)
        objective_ratio.add_metric([table.name], objective.percent / 100)
        for window in service_levels.attainments(objective, samples, now):
            if window.percent is not None:
                attained.add_metric([table.name, window.window], window.percent / 100)
    yield from (lag, objective_seconds, objective_ratio, attained)
