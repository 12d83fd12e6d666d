"""``hashcdc run --profile``: where a run's time goes, per dbt node and per Spark stage.

The run's SparkSession writes Spark's event log (``spark.eventLog.*``, switched on by the
``HASHCDC_EVENT_LOG`` variable of ``profiles/profiles.yml``); after dbt finishes, every
Spark job and its stages are attributed to the dbt node that submitted them — named in the
job's local property ``hashcdc.node``, which a node's connection sets on its thread
(:mod:`hashcdc.runtime.sessions`), so nodes running side by side on dbt's threads are told
apart — or else to the node whose execution window contains the job's submission; each
stage is printed with its duration, tasks and bytes read, shuffled and written. The event
log is Spark's documented, stable JSON format, and it works the same on the embedded Spark
and on a cluster.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIB = 2**20
STAGES_SHOWN_PER_NODE = 5
# The Spark local property naming the dbt node (its unique id) a thread runs.
NODE_PROPERTY = "hashcdc.node"


@dataclass(frozen=True)
class SparkStage:
    """A completed Spark stage as the event log reports it."""

    stage_id: int
    name: str
    submitted_ms: int
    completed_ms: int
    tasks: int
    input_bytes: int = 0
    output_bytes: int = 0
    shuffle_read_bytes: int = 0
    shuffle_write_bytes: int = 0

    @property
    def seconds(self) -> float:
        """Wall-clock seconds from submission to completion."""
        return (self.completed_ms - self.submitted_ms) / 1000

    def describe(self) -> str:
        """One line: duration, tasks and the bytes that moved."""
        moved = [
            (label, value)
            for label, value in (
                ("read", self.input_bytes),
                ("shuffle read", self.shuffle_read_bytes),
                ("shuffle write", self.shuffle_write_bytes),
                ("write", self.output_bytes),
            )
            if value
        ]
        bytes_text = ", ".join(f"{label} {value / MIB:.1f} MiB" for label, value in moved)
        return (
            f"stage {self.stage_id}: {self.seconds:.2f} s, {self.tasks} task(s)"
            + (f", {bytes_text}" if bytes_text else "")
            + f" ({self.name})"
        )


@dataclass(frozen=True)
class SparkJob:
    """A Spark job as the event log reports its start: what asked for it, and when."""

    job_id: int
    submitted_ms: int
    description: str = ""
    # The dbt node's unique id from the job's local properties ('' when none was set).
    node: str = ""
    stage_ids: tuple[int, ...] = ()


@dataclass
class NodeProfile:
    """One dbt node's time and the Spark jobs and stages that ran during it."""

    name: str
    seconds: float
    started_ms: int
    completed_ms: int
    unique_id: str = ""
    stages: list[SparkStage] = field(default_factory=list)
    jobs: list[SparkJob] = field(default_factory=list)


_METRICS = {
    "internal.metrics.input.bytesRead": "input_bytes",
    "internal.metrics.output.bytesWritten": "output_bytes",
    "internal.metrics.shuffle.read.remoteBytesRead": "shuffle_read_bytes",
    "internal.metrics.shuffle.read.localBytesRead": "shuffle_read_bytes",
    "internal.metrics.shuffle.write.bytesWritten": "shuffle_write_bytes",
}


def _event_lines(event_log: Path) -> Iterator[str]:
    """The lines of an event log: one file, or the parts of a rolling log's folder."""
    if event_log.is_dir():
        parts = sorted(event_log.glob("events_*"), key=lambda p: int(p.name.split("_")[1]))
    else:
        parts = [event_log]
    for part in parts:
        with part.open(encoding="utf-8") as lines:
            yield from lines


def _stage(info: dict[str, Any]) -> SparkStage:
    metrics: dict[str, int] = {}
    for accumulable in info.get("Accumulables", []):
        target = _METRICS.get(accumulable.get("Name", ""))
        if target:
            metrics[target] = metrics.get(target, 0) + int(accumulable.get("Value", 0))
    return SparkStage(
        stage_id=info["Stage ID"],
        name=info.get("Stage Name", ""),
        submitted_ms=info["Submission Time"],
        completed_ms=info["Completion Time"],
        tasks=info.get("Number of Tasks", 0),
        **metrics,
    )


def _job(event: dict[str, Any]) -> SparkJob:
    properties = event.get("Properties") or {}
    description = properties.get("spark.job.description") or properties.get("callSite.short", "")
    return SparkJob(
        int(event["Job ID"]),
        int(event["Submission Time"]),
        str(description),
        str(properties.get(NODE_PROPERTY) or ""),
        tuple(int(stage) for stage in event.get("Stage IDs") or ()),
    )


def read_event_log(event_log: Path, since_ms: int = 0) -> tuple[list[SparkStage], list[SparkJob]]:
    """The completed stages and the started jobs of an event log, submitted from ``since_ms``.

    One pass over the log. An engine's application runs many commands: ``since_ms`` keeps
    one run's.
    """
    stages: list[SparkStage] = []
    jobs: list[SparkJob] = []
    for line in _event_lines(event_log):
        if '"SparkListenerStageCompleted"' in line:
            info = json.loads(line)["Stage Info"]
            if "Completion Time" in info and info.get("Submission Time", -1) >= since_ms:
                stages.append(_stage(info))
        elif '"SparkListenerJobStart"' in line:
            event = json.loads(line)
            if int(event.get("Submission Time", 0)) >= since_ms:
                jobs.append(_job(event))
    return stages, jobs


def _epoch_ms(moment: dt.datetime) -> int:
    if moment.tzinfo is None:  # dbt records its timings in UTC
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def node_profiles(dbt_result: Any) -> list[NodeProfile]:
    """Each executed dbt node with its compile-and-execute window, from dbt's run results."""
    profiles: list[NodeProfile] = []
    for node_result in getattr(dbt_result, "results", None) or []:
        # Compile counts too: the hashcdc guards query the state while the SQL is rendered.
        windows = [t for t in node_result.timing if t.started_at and t.completed_at]
        if not windows:
            continue
        profiles.append(
            NodeProfile(
                name=node_result.node.name,
                seconds=node_result.execution_time,
                started_ms=min(_epoch_ms(t.started_at) for t in windows),
                completed_ms=max(_epoch_ms(t.completed_at) for t in windows),
                unique_id=node_result.node.unique_id,
            )
        )
    return profiles


def _owner(nodes: list[NodeProfile], submitted_ms: int) -> NodeProfile | None:
    return next((n for n in nodes if n.started_ms <= submitted_ms <= n.completed_ms), None)


def attribute(
    nodes: list[NodeProfile], stages: list[SparkStage], jobs: Sequence[SparkJob] = ()
) -> tuple[list[SparkStage], list[SparkJob]]:
    """Put each job and stage under the node that submitted it.

    The node a job names (``hashcdc.node``; a stage is its job's), else the node running
    when it was submitted. Returns the stages and jobs of no node (dbt's own queries
    between nodes).
    """
    by_id = {node.unique_id: node for node in nodes if node.unique_id}
    stage_owners: dict[int, NodeProfile] = {}
    outside: list[SparkJob] = []
    for job in sorted(jobs, key=lambda j: j.submitted_ms):
        owner = by_id.get(job.node) or _owner(nodes, job.submitted_ms)
        (outside if owner is None else owner.jobs).append(job)
        if owner is not None and job.node in by_id:
            stage_owners.update(dict.fromkeys(job.stage_ids, owner))
    unattributed: list[SparkStage] = []
    for stage in sorted(stages, key=lambda s: s.submitted_ms):
        owner = stage_owners.get(stage.stage_id) or _owner(nodes, stage.submitted_ms)
        if owner is None:
            unattributed.append(stage)
        else:
            owner.stages.append(stage)
    return unattributed, outside


def render(
    nodes: list[NodeProfile],
    unattributed: list[SparkStage],
    total_seconds: float,
    outside_jobs: Sequence[SparkJob] = (),
) -> str:
    """A markdown report: nodes by time with their Spark jobs, each with its slowest stages."""
    jobs = sum(len(n.jobs) for n in nodes) + len(outside_jobs)
    lines = [
        f"# hashcdc run profile ({total_seconds:.1f} s in dbt, parse included; {jobs} Spark "
        f"jobs, {len(outside_jobs)} of them outside any node)",
        "",
        "| dbt node | seconds | Spark jobs | Spark stages | stage seconds |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    ordered = sorted(nodes, key=lambda n: n.seconds, reverse=True)
    for node in ordered:
        stage_seconds = sum(s.seconds for s in node.stages)
        lines.append(
            f"| {node.name} | {node.seconds:.2f} | {len(node.jobs)} | {len(node.stages)} "
            f"| {stage_seconds:.2f} |"
        )
    lines.append("")
    for node in ordered:
        if not node.stages:
            continue
        lines.append(f"{node.name}:")
        slowest = sorted(node.stages, key=lambda s: s.seconds, reverse=True)
        lines += [f"  - {stage.describe()}" for stage in slowest[:STAGES_SHOWN_PER_NODE]]
        if len(slowest) > STAGES_SHOWN_PER_NODE:
            rest = sum(s.seconds for s in slowest[STAGES_SHOWN_PER_NODE:])
            lines.append(f"  - {len(slowest) - STAGES_SHOWN_PER_NODE} more: {rest:.2f} s")
    if unattributed:
        lines.append(
            f"outside any node (parse, metadata): {len(unattributed)} stage(s), "
            f"{sum(s.seconds for s in unattributed):.2f} s"
        )
    return "\n".join(lines) + "\n"


def event_log_file(event_log_dir: Path, application_id: str) -> Path | None:
    """The event log of an application: a file named after it, or a rolling log's folder."""
    for candidate in (
        f"eventlog_v2_{application_id}",
        application_id,
        f"{application_id}.inprogress",
    ):
        path = event_log_dir / candidate
        if path.exists():
            return path
    return None
