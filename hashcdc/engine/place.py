"""Where a project's engine lives and whether a running engine fits a command.

An engine is one per project folder: its socket and its record (pid, start, settings)
sit in a private runtime folder (``$HASHCDC_ENGINE_DIR``, else
``$XDG_RUNTIME_DIR/hashcdc``, else ``/tmp/hashcdc-<uid>``; mode 0700, so only its owner
can send it commands), named by a digest of the project's path; its log is the
project's ``logs/engine.log``. A command fits a running engine when the settings its
Spark session was built from are the command's too: the profile's rendered target, the
JDK, the JVM packages, the Python and hashcdc's own code (a changed file restarts it).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hashcdc.errors import HashcdcError
from hashcdc.runtime.metastore import process_started
from hashcdc.runtime.project import profile_output

ENGINE_DIR_VARIABLE = "HASHCDC_ENGINE_DIR"
# HASHCDC_ENGINE=off: every command runs in its own process, as before the engine.
SWITCH_VARIABLE = "HASHCDC_ENGINE"
IDLE_VARIABLE = "HASHCDC_ENGINE_IDLE_MINUTES"
DEFAULT_IDLE_MINUTES = 30.0
LOG_NAME = "engine.log"
# Where the code lives whose change makes a running engine stale.
CODE_ROOT = Path(__file__).resolve().parents[1]


def engine_enabled() -> bool:
    """Whether commands go through the engine (``HASHCDC_ENGINE`` is not ``off``)."""
    return os.environ.get(SWITCH_VARIABLE, "on").strip().lower() not in ("off", "0", "false")


def idle_minutes() -> float:
    """How long an engine waits for a command before it exits (``HASHCDC_ENGINE_IDLE_MINUTES``)."""
    text = os.environ.get(IDLE_VARIABLE, "")
    try:
        return float(text) if text else DEFAULT_IDLE_MINUTES
    except ValueError:
        raise HashcdcError(
            f"{IDLE_VARIABLE}={text!r} is not a number of minutes (default "
            f"{DEFAULT_IDLE_MINUTES:g})"
        ) from None


def runtime_dir() -> Path:
    """The private folder of this user's engines (created 0700; refused if not ours)."""
    configured = os.environ.get(ENGINE_DIR_VARIABLE)
    if configured:
        folder = Path(configured)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        folder = Path(os.environ["XDG_RUNTIME_DIR"]) / "hashcdc"
    else:
        folder = Path("/tmp") / f"hashcdc-{os.getuid()}"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise HashcdcError(
            f"{folder} (the engines' folder) must belong to you with mode 0700; fix it or set "
            f"{ENGINE_DIR_VARIABLE} to a folder of your own"
        )
    return folder


@dataclass(frozen=True)
class Place:
    """A project's engine files: its socket, its record, the start lock and its log."""

    project_dir: Path
    socket: Path
    record: Path
    start_lock: Path
    log: Path

    @classmethod
    def of(cls, project_dir: Path) -> Place:
        """The files of the engine of ``project_dir`` (an absolute path)."""
        digest = hashlib.sha256(str(project_dir).encode("utf-8")).hexdigest()[:16]
        folder = runtime_dir()
        return cls(
            project_dir=project_dir,
            socket=folder / f"{digest}.sock",
            record=folder / f"{digest}.json",
            start_lock=folder / f"{digest}.start.lock",
            log=project_dir / "logs" / LOG_NAME,
        )

    def read_record(self) -> dict[str, Any]:
        """The running (or last) engine's record; empty when there is none."""
        try:
            record = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def running_pid(self) -> int | None:
        """The recorded engine's pid while that engine runs; None when it does not.

        A pid outlives its process: once the engine is killed, another process, or a
        thread of one, may be given it. The engine records when its process started
        (``process_start``); an engine recorded before that is known by its command line.
        """
        record = self.read_record()
        pid = int(record.get("pid") or 0)
        started = process_started(pid)
        if started is None:
            return None
        if "process_start" in record:
            return pid if started == str(record["process_start"]) else None
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return None
        return pid if b"engine" in command and b"serve" in command else None

    def forget(self) -> None:
        """Remove the socket and the record (an engine that ended, or was killed)."""
        for path in (self.socket, self.record):
            path.unlink(missing_ok=True)


def _code_stamp() -> str:
    """The newest change to hashcdc's code: a running engine older than it is stale."""
    files = (path for path in CODE_ROOT.rglob("*") if path.suffix in (".py", ".sql"))
    newest = max((path.stat().st_mtime_ns for path in files), default=0)
    return str(newest)


def settings_of(project_dir: Path, target: str | None) -> dict[str, Any]:
    """What an engine's Spark session and code are made of, as a command sees it."""
    return {
        "profile": profile_output(project_dir, target),
        "target": target or "",
        "java_home": os.environ.get("JAVA_HOME", ""),
        "jars": os.environ.get("HASHCDC_JARS_DIR", ""),
        "python": sys.executable,
        "code": _code_stamp(),
    }


def digest_of(settings: dict[str, Any]) -> str:
    """A short digest of :func:`settings_of`, to compare a command with an engine."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """The names of the settings that differ (``profile`` when the profile does)."""
    return sorted(key for key in set(ours) | set(theirs) if ours.get(key) != theirs.get(key))
