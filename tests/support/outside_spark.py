"""Reading the lake in a process without Spark (``lake_readers.py``), from a test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

READERS = Path(__file__).parent / "lake_readers.py"
# DuckDB's reader version, installed apart from the peer's (tests/readers.txt).
READERS_PATH = Path(sys.executable).parent.parent / "readers"
READER_NAMES = ("duckdb", "polars", "delta-rs")


def read_outside_spark(request_file: Path, request: dict[str, Any]) -> dict[str, Any]:
    """What each reader finds for ``request`` (lake_readers.py's), in a process of its own."""
    request_file.write_text(json.dumps(request))
    environment = os.environ | {"PYTHONPATH": str(READERS_PATH), "TZ": "UTC"}
    done = subprocess.run(
        [sys.executable, str(READERS), str(request_file)],
        capture_output=True, text=True, env=environment, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def assert_readers_agree(found: dict[str, Any], expected: dict[str, list[list[str]]]) -> None:
    """Every reader's every read is the rows ``hashcdc query`` printed for it."""
    for reader in READER_NAMES:
        for read, rows in expected.items():
            assert found[reader][read] == rows, f"{reader}: {read}"
