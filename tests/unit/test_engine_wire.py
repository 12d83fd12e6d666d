"""The engine's rules without Spark: an engine process whose commands are stand-ins.

The process is :mod:`fake_engine` (tests/support): the real server, socket and routing,
with commands that print, ask, fail, exit and sleep. The tests speak the wire as the
client does (``hashcdc/engine/client.py``); the engine with Spark and dbt, driven by the
``hashcdc`` command, is tests/functional/test_engine.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fake_engine
import pytest

from hashcdc.engine.client import _connect
from hashcdc.engine.place import Place

SCRIPT = Path(fake_engine.__file__)


def _start(project: Path, idle_minutes: float) -> tuple[subprocess.Popen, Place]:
    process = subprocess.Popen(  # noqa: S603 - the test's own script
        [sys.executable, str(SCRIPT), str(project), str(idle_minutes)],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    place = Place.of(project.resolve())
    deadline = time.monotonic() + 30
    # The engine listens, then writes its record: both, or a test may read no pid.
    while _connect(place) is None or not place.read_record():
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the fake engine did not start"
        time.sleep(0.05)
    return process, place


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    folder = tmp_path / "engines"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("HASHCDC_ENGINE_DIR", str(folder))
    project = tmp_path / "project"
    project.mkdir()
    process, place = _start(project, idle_minutes=10)
    yield place
    process.terminate()
    process.wait(timeout=30)


def command(place: Place, *words: str, shared: bool = False, **extra: Any) -> list[dict]:
    """Send one command; every frame the engine sent back, the exit status last."""
    wire = _connect(place)
    assert wire is not None
    wire.send(
        {
            "request": "command",
            "argv": ["--project-dir", str(place.project_dir), *words],
            "cwd": str(place.project_dir),
            "env": dict(os.environ),
            "shared": shared,
            "settings": extra.get("settings", fake_engine.SETTINGS),
        }
    )
    frames = []
    while (frame := wire.receive()) is not None:
        if "ask" in frame:
            wire.send({"line": extra.get("answer", "")})
        frames.append(frame)
        if "exit" in frame or "mismatch" in frame:
            break
    wire.close()
    return frames


def _running(place: Place) -> list[str]:
    """What the engine runs now, as its status says."""
    wire = _connect(place)
    assert wire is not None
    wire.send({"request": "status"})
    frame = wire.receive() or {}
    wire.close()
    return frame["status"]["running"]


def _wait_for(check: Any, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.02)


def text(frames: list[dict], kind: str) -> str:
    return "".join(frame[kind] for frame in frames if kind in frame)


def test_output_questions_and_exit_statuses_reach_the_client(engine: Place) -> None:
    frames = command(engine, "echo", "hello", "world")
    assert text(frames, "out") == "hello world\n"
    assert text(frames, "err") == "to stderr\n"
    assert frames[-1] == {"exit": 0}
    assert command(engine, "exit", "3")[-1] == {"exit": 3}
    asked = command(engine, "ask", answer="yes\n")
    assert "answer? " in text(asked, "out") and "got yes" in text(asked, "out")
    # A thread of the command's own (dbt's node threads) writes to the command's client.
    assert text(command(engine, "thread"), "out") == "from a worker thread\n"


def test_a_failing_command_fails_alone(engine: Place) -> None:
    pid = engine.read_record()["pid"]
    frames = command(engine, "fail")
    assert frames[-1] == {"exit": 70}
    assert "RuntimeError: a command's own failure" in text(frames, "err")
    assert command(engine, "echo", "still", "here")[-1] == {"exit": 0}
    assert engine.read_record()["pid"] == pid


def test_readers_run_beside_a_writer_and_writers_wait_their_turn(engine: Place) -> None:
    finished: dict[str, float] = {}

    def writer(name: str, *words: str) -> threading.Thread:
        def run() -> None:
            frames = command(engine, *words)
            finished[name] = time.monotonic()
            finished[f"{name} frames"] = frames  # type: ignore[assignment]

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    first = writer("first", "sleep", "3")
    _wait_for(lambda: len(_running(engine)) == 1, "the first writer's start")
    second = writer("second", "echo", "after")
    _wait_for(lambda: len(_running(engine)) == 2, "the second writer's arrival")
    reader = command(engine, "echo", "reading", shared=True)
    # Answered while the first writer still runs and the second still waits.
    assert any("`hashcdc sleep 3`" in running for running in _running(engine))
    first.join()
    second.join()
    assert text(reader, "out") == "reading\n"
    # The second writer waited for the first (its note), then ran.
    assert text(finished["first frames"], "out") == "slept\n"  # type: ignore[arg-type]
    second_frames: list[dict] = finished["second frames"]  # type: ignore[assignment]
    assert "waiting for the engine's running command: `hashcdc sleep 3`" in text(
        second_frames, "note"
    )
    assert text(second_frames, "out") == "after\n"


def test_a_command_with_other_settings_is_told_which(engine: Place) -> None:
    frames = command(engine, "echo", "x", settings={"fake": False, "profile": {}})
    assert frames == [{"mismatch": ["fake", "profile"]}]


def test_stop_and_idle_exit_remove_the_engines_files(engine: Place, tmp_path: Path) -> None:
    wire = _connect(engine)
    assert wire is not None
    wire.send({"request": "stop"})
    assert wire.receive() == {"exit": 0}
    deadline = time.monotonic() + 30
    while engine.socket.exists() or engine.record.exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)

    idle = tmp_path / "idle"
    idle.mkdir()
    process, place = _start(idle, idle_minutes=0.02)
    assert process.wait(timeout=30) == 0
    assert not place.socket.exists() and not place.record.exists()


def test_a_pid_another_process_took_is_no_engine(engine: Place) -> None:
    """A killed engine's record names a pid the machine may give another process (or a
    thread of one): that one is no engine, so no command waits on it."""
    record = engine.read_record()
    assert engine.running_pid() == record["pid"]
    # This test's process holds the recorded pid now: started at another time.
    engine.record.write_text(json.dumps({**record, "pid": os.getpid()}))
    assert engine.running_pid() is None
    # A record from before engines recorded their start: known by the command line.
    older = {k: v for k, v in record.items() if k != "process_start"}
    engine.record.write_text(json.dumps({**older, "pid": os.getpid()}))
    assert engine.running_pid() is None
