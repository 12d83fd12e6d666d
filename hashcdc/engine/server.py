"""The engine process: a warm Spark session serving the commands its clients send.

Each connection is served in a thread of its own. Commands that read (``query``,
``status``) run side by side with anything; every other command runs alone, in the
client's environment and working folder, after the one before it (a second run is
served once the first has finished, with a note saying what it waits for). Output
written by a command (``print``, dbt's log, rich tables) goes to the client that sent
it; a thread of a command's own (dbt's node threads) writes to the client of the
command running alone. A client that goes away does not stop a command that writes
tables: it finishes (its output in the engine's log), so readers see the state before
it or after it, never a mix. A failing command is the command's failure, never the
engine's. The engine exits when it has been idle for its idle time, on ``stop`` or
SIGTERM (after the commands it runs), and removes its socket and record.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import itertools
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hashcdc.engine.place import Place, differences, digest_of
from hashcdc.engine.wire import Wire
from hashcdc.runtime.metastore import process_started

ACCEPT_POLL_SECONDS = 0.5
EXIT_INTERRUPTED = 130
EXIT_ENGINE_FAILURE = 70


def log(message: str) -> None:
    """One line of the engine's own log (its standard error, which is the log file)."""
    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    sys.__stderr__.write(f"{stamp} engine: {message}\n")
    sys.__stderr__.flush()


class Client:
    """The client a command answers to: its output, its questions, whether it is gone."""

    def __init__(self, wire: Wire, request: dict[str, Any]) -> None:
        self.wire = wire
        self.request = request
        self.tty = bool(request.get("tty"))
        self.stdin_tty = bool(request.get("stdin_tty"))
        self.shared = bool(request.get("shared"))
        # A long command that runs beside the others and takes the writer's turn for
        # each of its steps (``hashcdc stream``, :func:`writer_turn`).
        self.streaming = bool(request.get("streaming"))
        self.gone = False

    def emit(self, kind: str, text: str) -> None:
        """Send text (``out``, ``err`` or ``note``); into the log once the client is gone.

        A reading command whose client went away stops there (a broken pipe, as a query
        piped into ``head``); a writing one goes on.
        """
        if not self.gone:
            try:
                self.wire.send({kind: text})
                return
            except OSError:
                self.gone = True
                log("a client went away; its command goes on, its output follows here")
        if self.shared:
            raise BrokenPipeError("the client went away")
        sys.__stderr__.write(text)

    def ask(self) -> str:
        """One line of the client's standard input ('' when there is none)."""
        if self.gone:
            return ""
        try:
            self.wire.send({"ask": True})
        except OSError:
            self.gone = True
            return ""
        frame = self.wire.receive()
        return str(frame.get("line", "")) if frame else ""

    def watch_hang_up(self, on_hang_up: Callable[[], None]) -> None:
        """Call ``on_hang_up`` when the client closes its end (a reader sends nothing more)."""

        def watch() -> None:
            if self.wire.receive() is None:
                self.gone = True
                on_hang_up()

        threading.Thread(target=watch, name="hashcdc-engine-hang-up", daemon=True).start()

    def finish(self, code: int) -> None:
        """Send the exit status and close the connection."""
        with contextlib.suppress(OSError):
            if not self.gone:
                self.wire.send({"exit": code})
        self.wire.close()


_current = threading.local()
# The engine this process serves (None outside an engine).
_serving: Engine | None = None


@contextlib.contextmanager
def writer_turn() -> Iterator[None]:
    """One step of a streaming command: run alone, as a writing command runs.

    The engine's other writing commands wait for the step, and the step for them; readers
    go on beside it. Outside an engine, or outside a streaming command, nothing to take.
    """
    engine, client = _serving, getattr(_current, "client", None)
    if engine is None or client is None or not client.streaming:
        yield
        return
    engine.one_at_a_time.acquire()
    try:
        engine.alone = client
        yield
    finally:
        engine.alone = None
        engine.one_at_a_time.release()


def stop_requested() -> bool:
    """Whether a streaming command should stop at its next step's boundary.

    Its client went away (stopped by SIGTERM or Ctrl-C), or the engine is stopping.
    """
    engine, client = _serving, getattr(_current, "client", None)
    if engine is None:
        return False
    return engine.stopping.is_set() or (client is not None and client.gone)


def _client_of(engine: Engine) -> Client | None:
    """The client of the running thread's command, else of the command that runs alone."""
    return getattr(_current, "client", None) or engine.alone


class Routed(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` of the engine: each write to its command's client."""

    def __init__(self, kind: str, engine: Engine, fallback: Any) -> None:
        self.kind = kind
        self.engine = engine
        self.fallback = fallback

    def write(self, text: str) -> int:
        """Write to the command's client (or, from a thread of the engine's, to the readers)."""
        client = _client_of(self.engine)
        if client is not None:
            client.emit(self.kind, text)
            return len(text)
        # A thread of the engine's own (the executors' watch on a cluster) while only
        # readers run: what it says concerns them all.
        self.fallback.write(text)
        for reader in self.engine.clients():
            with contextlib.suppress(OSError):
                reader.emit(self.kind, text)
        return len(text)

    def flush(self) -> None:
        """Flush the log (a client's text is sent as it is written)."""
        self.fallback.flush()

    def isatty(self) -> bool:
        """Whether the client's standard output is a terminal."""
        client = _client_of(self.engine)
        return bool(client and client.tty)

    @property
    def encoding(self) -> str:
        """Text is sent as UTF-8."""
        return "utf-8"

    def writable(self) -> bool:
        """Writable, as standard output is."""
        return True


class RoutedInput(io.TextIOBase):
    """``sys.stdin`` of the engine: a line asked of the command's client."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def readline(self, size: int | None = -1) -> str:
        """One line of the client's standard input."""
        client = _client_of(self.engine)
        return client.ask() if client else ""

    def isatty(self) -> bool:
        """Whether the client's standard input is a terminal."""
        client = _client_of(self.engine)
        return bool(client and client.stdin_tty)

    def readable(self) -> bool:
        """Readable, as standard input is."""
        return True


@dataclass
class Running:
    """A command the engine runs: its arguments and when it began."""

    argv: list[str]
    client: Client | None = None
    began: float = field(default_factory=time.monotonic)

    @property
    def command(self) -> list[str]:
        """The arguments without the ``--project-dir`` the client adds (it is the engine's)."""
        if self.argv[:1] == ["--project-dir"]:
            return self.argv[2:]
        return self.argv

    def describe(self) -> str:
        """The command and how long it has run."""
        return f"`hashcdc {' '.join(self.command)}` ({time.monotonic() - self.began:.1f} s)"


@contextlib.contextmanager
def client_environment(request: dict[str, Any]) -> Iterator[None]:
    """Run in the client's environment variables and working folder, then restore ours."""
    ours, folder = dict(os.environ), os.getcwd()
    theirs = {str(k): str(v) for k, v in (request.get("env") or {}).items()}
    os.environ.update(theirs)
    for name in set(ours) - set(theirs):
        os.environ.pop(name, None)
    with contextlib.suppress(OSError):
        os.chdir(str(request.get("cwd") or folder))
    try:
        yield
    finally:
        os.environ.update(ours)
        for name in set(theirs) - set(ours):
            os.environ.pop(name, None)
        os.chdir(folder)


class Engine:
    """A project's engine: the socket it serves and the commands it runs."""

    def __init__(
        self,
        place: Place,
        settings: dict[str, Any],
        run_command: Callable[[Sequence[str]], int],
        idle_minutes: float,
    ) -> None:
        self.place = place
        self.settings = settings
        self.digest = digest_of(settings)
        self.run_command = run_command
        self.idle_minutes = idle_minutes
        self.started = time.time()
        self.last_active = time.monotonic()
        self.stopping = threading.Event()
        self.one_at_a_time = threading.Lock()
        # The client of the command that runs alone: where its threads' output goes.
        self.alone: Client | None = None
        self.running: dict[int, Running] = {}
        self.served = 0
        self._numbers = itertools.count(1)
        self._state = threading.Lock()

    # -- the process ---------------------------------------------------------
    def serve(self, finish: Callable[[], None] = lambda: None) -> int:
        """Listen, serve until idle, stopped or terminated; returns the exit status.

        ``finish`` (stopping Spark) runs after the last command; the record goes after it,
        so a newcomer waits for this engine instead of racing it for the metastore.
        """
        global _serving  # noqa: PLW0603 - the one engine of this process
        _serving = self
        sys.stdout = Routed("out", self, sys.__stdout__)
        sys.stderr = Routed("err", self, sys.__stderr__)
        sys.stdin = RoutedInput(self)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda signum, frame: self.stopping.set())
            signal.signal(signal.SIGINT, lambda signum, frame: self.stopping.set())
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.place.socket.unlink(missing_ok=True)
        listener.bind(str(self.place.socket))
        os.chmod(self.place.socket, 0o600)
        listener.listen(32)
        listener.settimeout(ACCEPT_POLL_SECONDS)
        self._write_record()
        log(
            f"ready: pid {os.getpid()}, project {self.place.project_dir}, idle exit after "
            f"{self.idle_minutes:g} min"
        )
        try:
            while not self.stopping.is_set():
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    if self._idle():
                        log(f"idle for {self.idle_minutes:g} min: exiting")
                        break
                    continue
                connection.settimeout(None)
                threading.Thread(target=self._serve_one, args=(connection,), daemon=True).start()
        finally:
            listener.close()
            self.place.socket.unlink(missing_ok=True)
            self._drain()
            try:
                finish()
            finally:
                self.place.forget()
        log("stopped")
        return 0

    def _idle(self) -> bool:
        with self._state:
            return not self.running and time.monotonic() - self.last_active > self.idle_minutes * 60

    def _drain(self) -> None:
        """Wait for the commands still running (a stop lets them finish)."""
        while True:
            with self._state:
                left = list(self.running.values())
            if not left:
                return
            log(f"stopping after {', '.join(r.describe() for r in left)}")
            time.sleep(1.0)

    def _write_record(self) -> None:
        record = {
            "pid": os.getpid(),
            # With the pid, what tells this process from a later one given the same pid.
            "process_start": process_started(os.getpid()),
            "started": dt.datetime.fromtimestamp(self.started).isoformat(timespec="seconds"),
            "project_dir": str(self.place.project_dir),
            "log": str(self.place.log),
            "idle_minutes": self.idle_minutes,
            "digest": self.digest,
        }
        partial = self.place.record.with_suffix(".json.partial")
        partial.write_text(json.dumps(record, indent=2), encoding="utf-8")
        partial.replace(self.place.record)

    # -- one connection ------------------------------------------------------
    def _serve_one(self, connection: socket.socket) -> None:
        wire = Wire(connection)
        request = wire.receive() or {}
        kind = request.get("request")
        try:
            if kind == "status":
                wire.send({"status": self.describe()})
            elif kind == "stop":
                log("asked to stop")
                self.stopping.set()
                wire.send({"exit": 0})
            elif kind == "command":
                self._command(wire, request)
                return  # the client closes the wire
        except OSError:
            pass
        wire.close()

    def _command(self, wire: Wire, request: dict[str, Any]) -> None:
        refusal = self._refusal(request.get("settings") or {})
        if refusal is not None:
            with contextlib.suppress(OSError):
                wire.send(refusal)
            wire.close()
            return
        argv = [str(a) for a in request.get("argv") or []]
        client = Client(wire, request)
        number = self._begin(argv, client)
        running = self.running[number]
        _current.client = client
        code = EXIT_ENGINE_FAILURE
        try:
            code = self._run(argv, client)
        finally:
            _current.client = None
            self._end(number)
            log(f"ran {running.describe()}: exit {code}")
        client.finish(code)

    def _refusal(self, theirs: dict[str, Any]) -> dict[str, Any] | None:
        """Why a command is not run here: other settings, or the engine is stopping."""
        if digest_of(theirs) != self.digest:
            return {"mismatch": differences(self.settings, theirs)}
        if self.stopping.is_set():
            return {"refused": "the engine is stopping"}
        return None

    def _run(self, argv: list[str], client: Client) -> int:
        if client.streaming:
            # Beside the others; its steps take the writer's turn (writer_turn), and it
            # stops at a step's boundary once the client hangs up (stop_requested).
            client.watch_hang_up(lambda: log(f"the client of `hashcdc {' '.join(argv)}` went away"))
            return self._call(argv)
        if client.shared:
            group = f"hashcdc-command-{uuid.uuid4().hex}"
            spark = _session()
            if spark is not None:
                spark.sparkContext.setJobGroup(group, " ".join(argv), interruptOnCancel=True)
                client.watch_hang_up(lambda: spark.sparkContext.cancelJobGroup(group))
            try:
                return self._call(argv)
            finally:
                if spark is not None:
                    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        if not self.one_at_a_time.acquire(blocking=False):
            with self._state:
                ahead = [r.describe() for r in self.running.values() if r.argv is not argv]
            client.emit("note", f"waiting for the engine's running command: {'; '.join(ahead)}")
            self.one_at_a_time.acquire()
        try:
            self.alone = client
            with client_environment(client.request):
                return self._call(argv)
        finally:
            self.alone = None
            self.one_at_a_time.release()

    def _call(self, argv: list[str]) -> int:
        try:
            return int(self.run_command(argv) or 0)
        except SystemExit as exc:  # argparse, or a command that exits
            code = exc.code
            return code if isinstance(code, int) else (0 if code is None else 1)
        except BrokenPipeError:
            return 0
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
        except Exception as exc:  # noqa: BLE001 - a command's failure is not the engine's
            log(f"`hashcdc {' '.join(argv)}` failed:\n{traceback.format_exc()}")
            print(
                f"hashcdc: the command failed inside the engine: {type(exc).__name__}: {exc} "
                f"(the stack is in {self.place.log})",
                file=sys.stderr,
            )
            return EXIT_ENGINE_FAILURE

    def clients(self) -> list[Client]:
        """The clients of the commands running now."""
        with self._state:
            return [r.client for r in self.running.values() if r.client is not None]

    def _begin(self, argv: list[str], client: Client) -> int:
        with self._state:
            number = next(self._numbers)
            self.running[number] = Running(argv, client)
            self.served += 1
        return number

    def _end(self, number: int) -> None:
        with self._state:
            self.running.pop(number, None)
            self.last_active = time.monotonic()

    # -- status --------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """What ``hashcdc status`` and ``hashcdc engine status`` show of the engine."""
        with self._state:
            running = [r.describe() for r in self.running.values() if r.command[:1] != ["status"]]
            served = self.served
        return {
            "pid": os.getpid(),
            "uptime_seconds": round(time.time() - self.started),
            "idle_minutes": self.idle_minutes,
            "served": served,
            "running": running,
            "log": str(self.place.log),
            **memory(),
        }


def memory() -> dict[str, int]:
    """The engine's resident memory and its JVM's heap (used and maximum), in bytes."""
    figures: dict[str, int] = {}
    # deferred: pyspark loads with the engine's session, never in a client
    from pyspark import SparkContext

    jvm = getattr(getattr(SparkContext._gateway, "proc", None), "pid", None)  # noqa: SLF001
    for name, pid in (("python_rss_bytes", "self"), ("jvm_rss_bytes", jvm)):
        if pid is not None:
            with contextlib.suppress(OSError, ValueError):
                figures[name] = resident_bytes(str(pid))
    context = SparkContext._active_spark_context  # noqa: SLF001 - pyspark's own handle
    if context is not None:
        with contextlib.suppress(Exception):
            runtime = context._jvm.java.lang.Runtime.getRuntime()  # noqa: SLF001
            figures["heap_used_bytes"] = int(runtime.totalMemory() - runtime.freeMemory())
            figures["heap_max_bytes"] = int(runtime.maxMemory())
    return figures


def resident_bytes(pid: str) -> int:
    """A process's resident memory (``VmRSS`` of ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise ValueError(f"no VmRSS for process {pid}")


def _session() -> Any:
    """The engine's SparkSession (None before it exists)."""
    # deferred: pyspark loads with the engine's session, never in a client
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() or SparkSession._instantiatedSession  # noqa: SLF001
