"""An engine whose commands are stand-ins (no Spark): the engine's wire, routing and rules.

``python fake_engine.py PROJECT_DIR`` serves until stopped, with the engines' folder of
``HASHCDC_ENGINE_DIR``. Its commands: ``echo WORDS`` (stdout and a line on stderr),
``ask`` (reads a line, echoes it), ``fail`` (raises), ``exit N``, ``sleep SECONDS``
(prints ``slept``) and ``thread`` (prints from a thread of its own).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from hashcdc.engine.place import Place
from hashcdc.engine.server import Engine

SETTINGS = {"fake": True}


def run_command(argv: Sequence[str]) -> int:
    """One stand-in command (``--project-dir P`` first, as the client sends it)."""
    name, *rest = list(argv)[2:]
    if name == "echo":
        print(" ".join(rest))
        print("to stderr", file=sys.stderr)
        return 0
    if name == "ask":
        print(f"got {input('answer? ').strip()}")
        return 0
    if name == "fail":
        raise RuntimeError("a command's own failure")
    if name == "exit":
        raise SystemExit(int(rest[0]))
    if name == "sleep":
        time.sleep(float(rest[0]))
        print("slept")
        return 0
    if name == "thread":
        worker = threading.Thread(target=lambda: print("from a worker thread"))
        worker.start()
        worker.join()
        return 0
    return 64


if __name__ == "__main__":
    place = Place.of(Path(sys.argv[1]).resolve())
    sys.exit(Engine(place, SETTINGS, run_command, idle_minutes=float(sys.argv[2])).serve())
