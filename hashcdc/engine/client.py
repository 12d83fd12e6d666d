"""The thin client: send a command to the project's engine, starting one when none runs.

The client streams the engine's output to its own standard output and error and exits
with the command's status, as the command would in a process of its own. When no engine
runs it starts one in the background (one client at a time starts it: a lock beside the
socket) and waits for it to be ready; when the running engine was built from other
settings (another profile target, a changed file of hashcdc, another JDK) it stops it
after the commands it runs and starts a fitting one. An engine killed on the way (its
socket refuses, its process is gone) is cleaned away and started again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hashcdc.engine.place import Place, idle_minutes, settings_of
from hashcdc.engine.wire import Wire
from hashcdc.errors import HashcdcError
from hashcdc.runtime.jars import jar_paths
from hashcdc.runtime.metastore import process_started

# How long a client waits for a new engine's Spark session (a cold JVM, a busy machine).
START_SECONDS = 300.0
# How long ``engine stop`` (or a restart) waits for the commands an engine still runs.
STOP_SECONDS = 900.0
POLL_SECONDS = 0.1
ATTEMPTS = 3


def _connect(place: Place) -> Wire | None:
    """A wire to the running engine, or None when none answers."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(place.socket))
    except OSError:
        connection.close()
        return None
    return Wire(connection)


def _log_tail(place: Place, offset: int) -> str:
    """The engine's own message from its log (the last ``hashcdc:`` line, else the last)."""
    try:
        with place.log.open("rb") as handle:
            handle.seek(offset)
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    said = [line for line in lines if line.startswith("hashcdc:")]
    return (said or [line for line in lines if line.strip()] or [""])[-1]


def _spawn(place: Place, target: str | None) -> None:
    """Start the project's engine in the background and wait until it answers."""
    # An installed hashcdc's first command fetches the JVM packages here, in the user's
    # terminal, rather than in the engine's log while the client waits.
    jar_paths()
    place.log.parent.mkdir(parents=True, exist_ok=True)
    offset = place.log.stat().st_size if place.log.exists() else 0
    print(
        f"hashcdc: starting the engine of {place.project_dir} (Spark starts once; later "
        "commands reuse it; `hashcdc engine stop` ends it)",
        file=sys.stderr,
        flush=True,
    )
    # The project is the working folder: the command line stays short enough for a
    # metastore's holder message to show it whole (`hashcdc engine serve …`).
    command = [
        sys.executable, "-m", "hashcdc.cli", "engine", "serve",
        *(["--target", target] if target else []), "--idle-minutes", f"{idle_minutes():g}",
    ]  # fmt: skip
    with place.log.open("ab") as log:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            command,
            cwd=place.project_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # a Ctrl-C at the client is not the engine's
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if place.socket.exists():
            wire = _connect(place)
            if wire is not None:
                wire.close()
                return
        if process.poll() is not None:
            said = _log_tail(place, offset)
            raise HashcdcError(
                f"the engine did not start: {said.removeprefix('hashcdc: ') or 'see its log'} "
                f"(its log: {place.log})"
            )
        time.sleep(POLL_SECONDS)
    process.kill()
    raise HashcdcError(
        f"the engine did not start within {START_SECONDS:.0f} s (its log: {place.log})"
    )


@contextlib.contextmanager
def _start_lock(place: Place) -> Any:
    with place.start_lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def connect_or_start(place: Place, target: str | None) -> Wire:
    """A wire to the project's engine, started first when none runs."""
    wire = _connect(place)
    if wire is not None:
        return wire
    with _start_lock(place):
        wire = _connect(place)  # another client started it while we waited
        if wire is not None:
            return wire
        pid = place.running_pid()
        if pid:  # an engine on its way out: it finishes what it runs first
            print(
                f"hashcdc: waiting for the stopping engine (pid {pid}) to finish its commands",
                file=sys.stderr,
                flush=True,
            )
            _wait_gone(place, pid, STOP_SECONDS)
        place.forget()  # a killed engine's socket and record
        _spawn(place, target)
    wire = _connect(place)
    if wire is None:
        raise HashcdcError(f"the engine started but does not answer (its log: {place.log})")
    return wire


def _wait_gone(place: Place, pid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    # The process, not its record: a stopping engine removes its record before it ends.
    started = process_started(pid)
    while started is not None and process_started(pid) == started:
        if time.monotonic() > deadline:
            raise HashcdcError(
                f"the engine (pid {pid}) did not stop within {seconds:.0f} s (its log: "
                f"{place.log}); stop it with `kill {pid}`"
            )
        time.sleep(POLL_SECONDS)


def _relay(wire: Wire) -> tuple[str, Any]:
    """Pass the engine's frames on until the command ends: (``exit``, status) or why not."""
    while True:
        frame = wire.receive()
        if frame is None:
            return "lost", None
        if "out" in frame:
            sys.stdout.write(frame["out"])
            sys.stdout.flush()
        elif "err" in frame:
            sys.stderr.write(frame["err"])
            sys.stderr.flush()
        elif "note" in frame:
            print(f"hashcdc: {frame['note']}", file=sys.stderr, flush=True)
        elif "ask" in frame:
            wire.send({"line": sys.stdin.readline()})
        elif "exit" in frame:
            return "exit", int(frame["exit"])
        elif "mismatch" in frame:
            return "mismatch", frame["mismatch"]
        elif "refused" in frame:
            return "refused", frame["refused"]


def forward(
    argv: list[str], project_dir: Path, target: str | None, shared: bool, streaming: bool = False
) -> int:
    """Run ``hashcdc argv`` in the project's engine; returns its exit status.

    ``shared``: a reader, run beside anything. ``streaming``: a long command run beside the
    others, whose steps take the writer's turn; it stops when this client goes away.
    """
    place = Place.of(project_dir)
    settings = settings_of(project_dir, target)
    environment = dict(os.environ)
    if sys.stdout.isatty():
        environment.setdefault("COLUMNS", str(os.get_terminal_size().columns))
    request = {
        "request": "command",
        "argv": argv,
        "cwd": os.getcwd(),
        "env": environment,
        "tty": sys.stdout.isatty(),
        "stdin_tty": sys.stdin.isatty(),
        "shared": shared,
        "streaming": streaming,
        "settings": settings,
    }
    for _ in range(ATTEMPTS):
        wire = connect_or_start(place, target)
        try:
            wire.send(request)
            outcome, value = _relay(wire)
        except KeyboardInterrupt:
            finishing = (
                "the stream stops after its running batch"
                if streaming
                else "the engine finishes the command in the background"
            )
            print(f"\nhashcdc: interrupted; {finishing} (its output: {place.log})", file=sys.stderr)
            return 128 + signal.SIGINT
        except OSError:
            outcome, value = "lost", None
        finally:
            wire.close()
        if outcome == "exit":
            return int(value)
        if outcome == "mismatch":
            print(
                f"hashcdc: the running engine was started with other settings "
                f"({', '.join(value)}); restarting it",
                file=sys.stderr,
                flush=True,
            )
            stop(place)
        elif outcome == "refused":
            _wait_gone(place, place.running_pid() or 0, STOP_SECONDS)
        else:
            raise HashcdcError(
                "the engine ended while it ran the command (killed, or out of memory: its "
                f"log {place.log} says: {_log_tail(place, 0) or 'nothing'}); run the command "
                "again: a new engine starts, and a date that did not finish runs again cleanly"
            )
    raise HashcdcError(f"could not reach a fitting engine (its log: {place.log})")


def stop(place: Place, seconds: float = STOP_SECONDS) -> bool:
    """Ask the engine to stop after its running commands; False when none was running."""
    pid = place.running_pid()
    wire = _connect(place)
    if wire is None:
        if pid:
            _wait_gone(place, pid, seconds)
        place.forget()
        return False
    try:
        wire.send({"request": "stop"})
        wire.receive()
    except OSError:
        pass
    finally:
        wire.close()
    if pid:
        _wait_gone(place, int(pid), seconds)
    return True


def status(place: Place) -> dict[str, Any] | None:
    """The running engine's figures (pid, uptime, memory, what it runs), or None."""
    wire = _connect(place)
    if wire is None:
        return None
    try:
        wire.send({"request": "status"})
        frame = wire.receive()
    except OSError:
        return None
    finally:
        wire.close()
    return (frame or {}).get("status")


def start(place: Place, target: str | None) -> None:
    """Start the project's engine if none runs (``hashcdc engine start``)."""
    connect_or_start(place, target).close()


def describe(figures: dict[str, Any] | None) -> str:
    """The engine in one line, for ``hashcdc status`` and ``hashcdc engine status``."""
    if figures is None:
        return "engine: not running (the next command starts one)"
    gib, mib = 1024**3, 1024**2
    parts = [
        f"engine: pid {figures['pid']}, up {_duration(figures['uptime_seconds'])}",
        f"served {figures['served']} command(s)",
    ]
    if "heap_used_bytes" in figures:
        parts.append(
            f"memory: JVM {figures.get('jvm_rss_bytes', 0) / gib:.1f} GiB resident (heap "
            f"{figures['heap_used_bytes'] / gib:.1f} of {figures['heap_max_bytes'] / gib:.1f} "
            f"GiB), Python {figures.get('python_rss_bytes', 0) / mib:.0f} MiB"
        )
    running = figures.get("running") or []
    parts.append(f"running {'; '.join(running)}" if running else "idle")
    parts.append(f"exits after {figures['idle_minutes']:g} min idle; log {figures['log']}")
    return ", ".join(parts)


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"
