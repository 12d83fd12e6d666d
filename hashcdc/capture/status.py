"""``hashcdc status``'s capture part: per captured table, how far its capture has landed.

Read from each capture's offsets (``.hashcdc/capture/<slot>.json``) and, when the server
answers, its current log position: the bytes of log the capture is behind, and how long
ago the last landed transaction committed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from rich.table import Table

from hashcdc.capture.group import capture_group
from hashcdc.capture.landing import CONTROL_SUFFIX, Offsets, held_files, paused_tables
from hashcdc.capture.sources import source_for
from hashcdc.config import TableConfig
from hashcdc.errors import HashcdcError


def _server_position(tables: list[TableConfig]) -> int | str:
    """The server's current log position, or why it is not known."""
    group = capture_group(tables)
    try:
        return int(source_for(group.database.kind).server_position(group))
    except HashcdcError as exc:
        return str(exc).splitlines()[0]


def _failures_text(offsets: Offsets) -> str:
    """How often the capture lost its server, and the latest loss (its time, its cause)."""
    return f"{offsets.lost}, the last: {offsets.failures[-1]}" if offsets.failures else "0"


def capture_table(tables: Sequence[TableConfig], state_dir: Path, now: dt.datetime) -> Table | None:
    """One line per captured table with offsets; ``None`` when nothing is captured."""
    captured: dict[str, list[TableConfig]] = {}
    for table in tables:
        database = table.source.database
        if database is not None and table.extract_type == "changes":
            captured.setdefault(database.capture_slot, []).append(table)
    rows = []
    for slot, members in captured.items():
        offsets = Offsets.load(state_dir / f"{slot}.json", slot)
        if offsets.updated is None:
            continue

        source = source_for(members[0].source.database.kind)  # type: ignore[union-attr]
        server = _server_position(members)
        behind = source.distance(server, offsets.position) if isinstance(server, int) else server
        paused = paused_tables(state_dir / f"{slot}{CONTROL_SUFFIX}")
        for table in members:
            held = len(held_files(state_dir, slot, table.name))
            state = "paused" if table.name in paused else "resuming" if held else "capturing"
            progress = offsets.tables.get(table.name)
            committed = progress.last_commit_time if progress else None
            ago = (
                f"{(now - dt.datetime.fromisoformat(committed)).total_seconds():.0f} s ago"
                if committed
                else "—"
            )
            rows.append(
                (
                    table.name,
                    slot,
                    f"{state}, {held} file(s) held" if held else state,
                    offsets.snapshot or "not yet",
                    source.position_text(offsets.position),
                    behind,
                    ago,
                    f"{progress.events:,}" if progress else "0",
                    str(progress.files) if progress else "0",
                    _failures_text(offsets),
                )
            )
    if not rows:
        return None
    out = Table(title="capture")
    headings = (
        "table", "slot", "state", "snapshot", "landed up to", "behind the server", "last commit",
        "events", "files", "failures",
    )  # fmt: skip
    for heading in headings:
        out.add_column(heading)
    for row in rows:
        out.add_row(*row)
    return out


class CaptureCollector(Collector):
    """A capture's metrics from its offsets (``hashcdc.state.metrics`` serves them)."""

    def __init__(self, tables: Callable[[], list[TableConfig]], state_dir: Path) -> None:
        self.tables = tables
        self.state_dir = state_dir

    def collect(self) -> Iterator[Metric]:
        """Per table its events and files landed, its last commit; per slot its losses."""
        events = CounterMetricFamily(
            "hashcdc_capture_events", "Change events the capture landed", labels=["table"]
        )
        files = CounterMetricFamily(
            "hashcdc_capture_files", "Files the capture landed", labels=["table"]
        )
        committed = GaugeMetricFamily(
            "hashcdc_capture_last_commit_timestamp_seconds",
            "When the last landed transaction of the table committed on the source (Unix time)",
            labels=["table"],
        )
        lost = CounterMetricFamily(
            "hashcdc_capture_failures",
            "Times the capture lost its server (each retried until --retry-seconds)",
            labels=["slot"],
        )
        slots: dict[str, list[str]] = {}
        for table in self.tables():
            database = table.source.database
            if database is not None and table.is_feed:
                slots.setdefault(database.capture_slot, []).append(table.name)
        for slot, names in sorted(slots.items()):
            offsets = Offsets.load(self.state_dir / f"{slot}.json", slot)
            if offsets.updated is None:
                continue
            lost.add_metric([slot], offsets.lost)
            for name in names:
                progress = offsets.tables.get(name)
                events.add_metric([name], progress.events if progress else 0)
                files.add_metric([name], progress.files if progress else 0)
                if progress and progress.last_commit_time:
                    moment = dt.datetime.fromisoformat(progress.last_commit_time)
                    committed.add_metric([name], moment.timestamp())
        yield from (events, files, committed, lost)
