"""Headless Chromium for the tests of pages (the report, dbt docs): the DOM after scripts
ran, and a screenshot kept under ``target/test-artifacts/`` of the repository.

Chromium comes from Debian's ``chromium`` package (``make test`` installs it). Each call
is one Chromium process that exits by itself; it is killed (with its children) when it
overruns, so no browser outlives a test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from servers import stop_group

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "target" / "test-artifacts"
# Headless, no sandbox (the tests may run as root), nothing fetched from the network.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--hide-scrollbars",
)
# Virtual time lets the page's scripts run (plotly draws, dbt docs loads) before the dump.
SCRIPT_TIME_MS = 20_000


def chromium() -> str:
    """The Chromium executable; fails with what to do when it is missing."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError("Chromium is missing: `make test` installs Debian's chromium package")


def _run(url: str, *extra: str) -> str:
    with tempfile.TemporaryDirectory(prefix="hashcdc-chromium-") as profile:
        command = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={SCRIPT_TIME_MS}",
            *extra,
            url,
        ]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "HOME": profile},
        )
        try:
            out, err = process.communicate(timeout=180)
        finally:
            stop_group(process)
    assert process.returncode == 0, f"chromium failed on {url}:\n{err[-2000:]}"
    return out


def rendered_dom(url: str) -> str:
    """The page's DOM once its scripts ran."""
    return _run(url, "--dump-dom")


def screenshot(url: str, name: str, height: int = 2400) -> Path:
    """A PNG of the page, kept as a test artifact; returns its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    path.unlink(missing_ok=True)
    _run(url, f"--screenshot={path}", f"--window-size=1280,{height}")
    assert path.exists() and path.stat().st_size > 10_000, f"no screenshot of {url}"
    return path
