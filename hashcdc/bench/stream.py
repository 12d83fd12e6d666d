"""``hashcdc bench --stream``: how far ``current`` trails a change feed's source.

In a scratch project of its own, a change feed (``bench_stream``: a ``bigint`` key, a name
and an amount) gets ``--rows`` snapshot reads, then ``rate`` updates every second for
``seconds``, each event's Debezium ``ts_ms`` the time they were delivered (the source
commit, as ``hashcdc capture`` lands a roll or Debezium publishes a transaction). They are
delivered as files landed in a folder, or (``--kafka``) as records published to a topic of
a Kafka broker the bench starts on 127.0.0.1 (``hashcdc.runtime.local_servers``).
Measured twice on the same events, one after the other, on an otherwise idle machine:

* **hashcdc**: ``hashcdc stream --interval 0.5`` in the project's engine, as a user runs
  it. A second's lag is its events' commit time to the end of the first micro-batch whose
  latest applied event is at least as late (the audit's ``ended_at`` and
  ``latest_event_at``): then ``current`` shows it.
* **peer**: the recipe a Spark user writes — Structured Streaming over the same kind of
  source (the folder's ``text`` source, or Spark's Kafka source on a topic of its own
  with the same events), a 0.5 s trigger and a ``foreachBatch`` that keeps the latest
  event per key and MERGEs it into a Delta table, in a process of its own; a second's
  lag is its commit time to the end of the batch that merged it.

Reported: p50, p99 and the worst lag, batches, and the resident memory of the stream's
process (the engine and its JVM) sampled every 5 s: its first and last sample after the
snapshot. One run, no repetition (docs/benchmarks.md).

``--tables N``: N feeds in one table group (``bench``), ``--rows`` spread over them and
each second's updates too (one file, or one topic's records, a table a second); the peer
reads every table's folder, or every table's topic (``subscribePattern``), in one stream
and MERGEs each table its batch touched into that table's Delta table. A second's lag is
then per table: its file's commit to the end of the first batch that applied that table's
events as late.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import yaml

from hashcdc.codegen import generate
from hashcdc.config import load_table_configs
from hashcdc.engine.place import Place
from hashcdc.runtime import local_servers
from hashcdc.runtime.local_servers import KafkaBroker
from hashcdc.runtime.scaffold import scratch_project

TABLE = "bench_stream"
GROUP = "bench"
# The start of the peer's topics (the same events as the table's, delivered while the peer
# runs: a table's topic is this and its name), and the variable that gives the peer its broker.
PEER_TOPIC_PREFIX = "peer_"
PEER_SERVERS = "HASHCDC_BENCH_KAFKA"
SAMPLE_SECONDS = 5.0
CONFIG = {
    "name": TABLE,
    "extract_type": "changes",
    "source": {"path": f"landing/{TABLE}/{{business_date}}/*", "format": "debezium"},
    "changes": {"sequence_by": ["source.lsn"]},
    "columns": [
        {"name": "id", "type": "bigint", "key": True},
        {"name": "name", "type": "string"},
        {"name": "amount", "type": "bigint"},
    ],
}


def _event(op: str, key: int, amount: int, lsn: int, ts_ms: int) -> str:
    row = {"id": key, "name": f"name {key}", "amount": amount}
    source = {"connector": "postgresql", "lsn": lsn, "ts_ms": ts_ms}
    return json.dumps({"before": None, "after": row, "op": op, "ts_ms": ts_ms, "source": source})


class Folder:
    """Events delivered as files landed in a folder, each renamed into place whole."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def deliver(self, name: str, lines: list[str]) -> None:
        """Land one file of event lines."""
        scratch = self.folder / f".{name}"
        scratch.write_text("\n".join(lines) + "\n", encoding="utf-8")
        scratch.rename(self.folder / name)  # whole, as the capture lands a roll


class Topic:
    """Events delivered as records of a Kafka topic, keyed by the row's key as Debezium's."""

    # One producer per broker, shared by its topics (a group's hundred topics, one client).
    _producers: ClassVar[dict[str, Any]] = {}

    def __init__(self, bootstrap_servers: str, topic: str) -> None:
        # Imported here: only the Kafka bench needs the client (a dev dependency).
        from confluent_kafka import Producer

        self.topic = topic
        if bootstrap_servers not in self._producers:
            settings = {"bootstrap.servers": bootstrap_servers, "linger.ms": 5}
            self._producers[bootstrap_servers] = Producer(
                settings | {"queue.buffering.max.messages": 2_000_000}
            )
        self.producer = self._producers[bootstrap_servers]

    def deliver(self, name: str, lines: list[str]) -> None:
        """Publish the lines and wait until the broker has them all."""
        del name  # a topic has no file names
        for line in lines:
            key = json.dumps({"id": json.loads(line)["after"]["id"]})
            self.producer.produce(self.topic, key=key, value=line)
            self.producer.poll(0)
        if self.producer.flush(60) != 0:
            raise SystemExit(f"bench: the broker did not take every record of {self.topic}")


Feeds = dict[str, Folder | Topic]


class Landing(threading.Thread):
    """Delivers ``rate`` updates every second spread over the feeds; records each delivery."""

    def __init__(self, feeds: Feeds, rows: int, rate: int, seconds: int, first_lsn: int) -> None:
        super().__init__(daemon=True)
        self.feeds, self.rows, self.rate, self.seconds = feeds, rows, rate, seconds
        self.lsn = first_lsn
        self.files: list[tuple[str, str, int]] = []  # (table, name, commit ms)

    def run(self) -> None:
        """Deliver the updates, a second's at a time (a file a table)."""
        names = list(self.feeds)
        started = time.monotonic()
        for second in range(self.seconds):
            time.sleep(max(0.0, started + second - time.monotonic()))
            now_ms = int(time.time() * 1000)
            lines: dict[str, list[str]] = {}
            for _ in range(self.rate):
                self.lsn += 1
                # Spread over the tables, and over each table's keys.
                table = names[self.lsn % len(names)]
                key = (self.lsn // len(names) * 7919) % self.rows
                lines.setdefault(table, []).append(_event("u", key, self.lsn, self.lsn, now_ms))
            name = f"updates-{second:05d}.json"
            for table, table_lines in lines.items():
                self.feeds[table].deliver(name, table_lines)
                self.files.append((table, name, now_ms))


def _snapshot(feeds: Feeds, rows: int) -> int:
    """Each feed's snapshot reads, delivered at once (in slices of 100,000); the last lsn."""
    now_ms = int(time.time() * 1000)
    for feed in feeds.values():
        for start in range(0, rows, 100_000):
            keys = range(start, min(rows, start + 100_000))
            lines = [_event("r", key, 0, 1, now_ms) for key in keys]
            feed.deliver(f"snapshot-{start:09d}.json", lines)
    return 1


def _resident_mib(pid: int) -> float:
    """Resident memory of a process and its children (the engine and its JVM), MiB."""
    total = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for each in pids:
        status = Path(f"/proc/{each}/status")
        if status.exists():
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return round(total / 1024, 1)


def _percentiles(lags: list[float]) -> dict[str, float]:
    ordered = sorted(lags)
    if not ordered:
        return {}

    def at(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 2)

    return {"p50_s": at(0.5), "p99_s": at(0.99), "max_s": round(ordered[-1], 2)}


Batches = list[tuple[str, int, int]]  # (table, end ms, its latest event's commit ms)


def _file_lags(files: list[tuple[str, str, int]], batches: Batches) -> list[float]:
    """Each file's lag: commit to the end of its table's first batch holding an event as late."""
    ends_of: dict[str, list[tuple[int, int]]] = {}
    for table, ended, latest in batches:
        ends_of.setdefault(table, []).append((ended, latest))
    lags = []
    for table, _, commit_ms in files:
        ends = [ended for ended, latest in ends_of.get(table, []) if latest >= commit_ms]
        if ends:
            lags.append((min(ends) - commit_ms) / 1000)
    return lags


def _land_and_sample(
    pid: int, feeds: Feeds, rows: int, rate: int, seconds: int, lsn: int
) -> tuple[Landing, list[float]]:
    """Deliver the updates while sampling the stream process's memory; then 30 s for the tail."""
    memory = [_resident_mib(pid)]
    landing = Landing(feeds, rows, rate, seconds, lsn)
    landing.start()
    while landing.is_alive():
        landing.join(SAMPLE_SECONDS)
        memory.append(_resident_mib(pid))
    time.sleep(30)  # the last files' batches
    memory.append(_resident_mib(pid))
    return landing, memory


def _figures(landing: Landing, batches: Batches, memory: list[float]) -> dict:
    """One side's figures: batches, files made visible, lag percentiles, memory."""
    lags = _file_lags(landing.files, batches)
    return {
        "batches": len({ended for _, ended, _ in batches}),
        "files": len(landing.files),
        "files_visible": len(lags),
        **_percentiles(lags),
        "memory_mib_first": memory[0],
        "memory_mib_last": memory[-1],
        "memory_mib_max": max(memory),
    }


def _hashcdc(work: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "hashcdc.cli", "--project-dir", str(work), *args]


def _hashcdc_side(
    work: Path, env: dict[str, str], feeds: Feeds, rows: int, rate: int, seconds: int
) -> dict:
    lsn = _snapshot(feeds, rows)
    log = (work / "stream.log").open("w")
    stream = subprocess.Popen(
        _hashcdc(work, "stream", "--interval", "0.5"), cwd=work, env=env, stdout=log, stderr=log
    )
    try:
        while "applied:" not in (work / "stream.log").read_text():
            if stream.poll() is not None:
                raise SystemExit((work / "stream.log").read_text()[-3000:])
            time.sleep(0.5)
        pid = int(Place.of(work).read_record().get("pid") or 0)
        landing, memory = _land_and_sample(pid, feeds, rows, rate, seconds, lsn)
    finally:
        stream.terminate()
        stream.wait(60)
    done = subprocess.run(
        _hashcdc(
            work,
            "query",
            "select table_name, unix_millis(ended_at), unix_millis(latest_event_at) "
            f"from cdc_runs where table_name like '{TABLE}%' and command = 'run' "
            "and latest_event_at is not null",
        ),
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    batches = [
        (table, int(ended), int(latest))
        for table, ended, latest in (line.split(",") for line in done.stdout.splitlines()[1:])
    ]
    return _figures(landing, batches, memory)


def _peer_side(
    work: Path, env: dict[str, str], feeds: Feeds, rows: int, rate: int, seconds: int
) -> dict:
    lsn = _snapshot(feeds, rows)
    batches_file = work / "peer_batches.jsonl"
    log = (work / "peer.log").open("w")
    peer_module = "hashcdc.bench.stream_peer"
    [feed, *_] = feeds.values()
    # One stream over every table's folder (a folder a table: the table is its name).
    source = (
        f"{PEER_TOPIC_PREFIX}.*"
        if isinstance(feed, Topic)
        else str(feed.folder.parent / "*" / "*.json")
    )
    command = [sys.executable, "-m", peer_module, str(work), source, str(batches_file)]
    peer = subprocess.Popen(
        command, cwd=work, env=env | {"HASHCDC_ENGINE": "off"}, stdout=log, stderr=log
    )
    try:
        while not batches_file.exists() or not batches_file.read_text().strip():
            if peer.poll() is not None:
                raise SystemExit((work / "peer.log").read_text()[-3000:])
            time.sleep(0.5)
        landing, memory = _land_and_sample(peer.pid, feeds, rows, rate, seconds, lsn)
    finally:
        peer.terminate()
        peer.wait(60)
    batches = [tuple(json.loads(line)) for line in batches_file.read_text().splitlines()]
    return _figures(landing, batches, memory)  # type: ignore[arg-type]


def run(
    project_dir: Path, rows: int, rate: int, seconds: int, kafka: bool = False, tables: int = 1
) -> dict[str, Any]:
    """Both sides on the same events, one after the other; their figures.

    ``tables`` > 1: that many feeds in one group, ``rows`` spread over them.
    """
    if not kafka:
        return _run(project_dir, rows, rate, seconds, None, tables)
    with local_servers.kafka_broker("1g") as broker:
        return _run(project_dir, rows, rate, seconds, broker, tables)


def _run(
    project_dir: Path,
    rows: int,
    rate: int,
    seconds: int,
    broker: KafkaBroker | None,
    tables: int = 1,
) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="hashcdc_stream_bench_"))
    env = os.environ | scratch_project(project_dir, work)
    names = [TABLE] if tables == 1 else [f"{TABLE}_{n:03d}" for n in range(tables)]
    for name in names:
        config: dict[str, Any] = dict(CONFIG) | {"name": name}
        config["source"] = {"path": f"landing/{name}/{{business_date}}/*", "format": "debezium"}
        if broker is not None:
            kafka = {"bootstrap_servers": broker.bootstrap_servers, "topic": name}
            config["source"] = {"format": "debezium", "kafka": kafka}
        if tables > 1:
            config["group"] = GROUP
        (work / "tables" / f"{name}.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    generate.write(work, load_table_configs(work / "tables"))
    figures: dict[str, Any] = {"rows": rows, "rate": rate, "seconds": seconds, "tables": tables}
    figures["source"] = "kafka" if broker is not None else "files"
    today = dt.datetime.now(dt.UTC).date().isoformat()
    ours: Feeds
    theirs: Feeds
    if broker is not None:
        ours = {name: Topic(broker.bootstrap_servers, name) for name in names}
        theirs = {name: Topic(broker.bootstrap_servers, PEER_TOPIC_PREFIX + name) for name in names}
    else:
        ours = {name: Folder(work / "landing" / name / today) for name in names}
        theirs = {name: Folder(work / "peer_landing" / name) for name in names}
    peer_env = env | ({PEER_SERVERS: broker.bootstrap_servers} if broker is not None else {})
    per_table = max(1, rows // tables)
    try:
        figures["hashcdc"] = _hashcdc_side(work, env, ours, per_table, rate, seconds)
        subprocess.run(_hashcdc(work, "engine", "stop"), cwd=work, env=env, check=False)
        figures["peer"] = _peer_side(work, peer_env, theirs, per_table, rate, seconds)
    finally:
        subprocess.run(_hashcdc(work, "engine", "stop"), cwd=work, env=env, check=False)
        if not os.environ.get("HASHCDC_BENCH_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    return figures
