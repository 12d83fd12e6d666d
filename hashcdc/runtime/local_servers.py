"""Servers hashcdc starts for itself on 127.0.0.1: a single-node Kafka broker.

The tests and ``hashcdc bench --stream --kafka`` publish Debezium events to it. It runs
from the jars ``make install`` fetched (``jars/kafka-broker``), inside a ``with`` block,
and is stopped when the block ends, also when what runs in it fails. The small process
helpers here (a free loopback port, a wait, stopping a process group) are the tests'
too (``tests/support/servers.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hashcdc.runtime.jars import broker_classpath

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port nobody listens on now, on the loopback address."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def wait_until(check: Callable[[], Any], seconds: float, what: str) -> Any:
    """Poll ``check`` until it returns something true; fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not within {seconds:.0f} s")


def stop_group(process: subprocess.Popen, seconds: float = 15) -> None:
    """Stop a process and its children (started in a session of their own)."""
    if process.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=seconds)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class KafkaBroker:
    """A single-node Kafka broker (KRaft: its own controller) on a loopback port."""

    port: int
    folder: Path
    command: tuple[str, ...] = ()
    process: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        """What a client is given to reach it."""
        return f"{LOOPBACK}:{self.port}"

    def start(self) -> None:
        """Start it on its storage; return when its port answers."""
        with (self.folder / "server.log").open("a") as log:
            self.process = subprocess.Popen(
                list(self.command), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        process = self.process

        def answers() -> bool:
            if process.poll() is not None:
                tail = (self.folder / "server.log").read_text()[-2000:]
                raise RuntimeError(f"Kafka stopped: {tail}")
            with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, self.port), 1):
                return True
            return False

        wait_until(answers, 90, "Kafka's start")

    def stop(self) -> None:
        """Stop it (SIGTERM: a clean shutdown; SIGKILL after 15 s)."""
        if self.process is not None:
            stop_group(self.process)
            self.process = None


@contextmanager
def kafka_broker(memory: str = "512m") -> Iterator[KafkaBroker]:
    """Kafka from the jars `make install` fetched (jars/kafka-broker), stopped at the end.

    The storage is formatted for a one-node cluster, then the broker started; it is ready
    when its port answers. Topics are created on first use, one partition each.
    """
    folder = Path(tempfile.mkdtemp(prefix="hashcdc_kafka_"))
    port, controller = free_port(), free_port()
    settings = folder / "server.properties"
    settings.write_text(
        "\n".join([
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.voters=1@{LOOPBACK}:{controller}",
            f"listeners=PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller}",
            f"advertised.listeners=PLAINTEXT://{LOOPBACK}:{port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={folder / 'logs'}",
            "num.partitions=1",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "auto.create.topics.enable=true",
            # The tests' records carry commit times of past dates as their timestamps: kept
            # (time-based retention would delete them at once).
            "log.retention.ms=-1",
        ]) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    java = [shutil.which("java") or "java", f"-Xmx{memory}", "-XX:+UseSerialGC", "-cp",
            ":".join(str(path) for path in broker_classpath())]  # fmt: skip
    subprocess.run(
        [*java, "kafka.tools.StorageTool", "format", "-t", "hashcdc-tests-cluster0",
         "-c", str(settings)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    broker = KafkaBroker(port, folder, command=(*java, "kafka.Kafka", str(settings)))
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(folder, ignore_errors=True)
