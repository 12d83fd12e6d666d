"""Where the suite's time goes: each test module's wall time, its dbt and its engines.

The terminal summary lists the modules by wall time with the number and time of the dbt
commands they ran in the test session (``dbtRunner.invoke``, through ``project.dbt`` or an
in-process ``hashcdc`` command), and the commands the engines they started served (from
each engine's log: its start and every command's seconds, :func:`engine_share`); the rest
of a module's time is its own processes (a cold ``hashcdc`` subprocess starts a JVM),
servers and queries (none left when its engines served commands side by side, whose
seconds overlap). ``--durations`` gives the tests.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

SHOWN_MODULES = 15


@dataclass
class ModuleTime:
    """One test module's wall time and in-process dbt commands."""

    wall: float = 0.0
    dbt_commands: int = 0
    dbt_seconds: float = 0.0
    engine_commands: int = 0
    engine_seconds: float = 0.0


_modules: dict[str, ModuleTime] = defaultdict(ModuleTime)
_current: list[str] = []


def _module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    """Time each test, set-up and tear-down included, under its module."""
    module = _module_of(item)
    _current[:] = [module]
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        _modules[module].wall += time.perf_counter() - started


def timed_invoke(invoke: Any) -> Any:
    """``dbtRunner.invoke``, counted under the running test's module."""

    def invoke_and_count(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return invoke(self, *args, **kwargs)
        finally:
            module = _modules[_current[0] if _current else "(outside tests)"]
            module.dbt_commands += 1
            module.dbt_seconds += time.perf_counter() - started

    return invoke_and_count


_RAN = re.compile(r"engine: ran `.*` \(([\d.]+) s\): exit")
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) engine: (starting Spark|ready)")


def engine_share(logs: list[Any]) -> None:
    """Count the commands (and starts) in engines' logs under the running test's module."""
    module = _modules[_current[0] if _current else "(outside tests)"]
    for log in logs:
        starting = None
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            ran = _RAN.search(line)
            if ran:
                module.engine_commands += 1
                module.engine_seconds += float(ran.group(1))
            stamp = _STAMP.match(line)
            if stamp:
                moment = dt.datetime.fromisoformat(stamp.group(1))
                if stamp.group(2) == "ready" and starting is not None:
                    module.engine_seconds += (moment - starting).total_seconds()
                starting = moment


def pytest_configure(config: pytest.Config) -> None:
    """Count the in-process dbt commands."""
    from dbt.cli.main import dbtRunner

    dbtRunner.invoke = timed_invoke(dbtRunner.invoke)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker, hand the worker's modules to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["time_ledger"] = {name: dataclasses.asdict(m) for name, m in _modules.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """In the pytest-xdist controller, add a finished worker's modules to the ledger."""
    for name, times in getattr(node, "workeroutput", {}).get("time_ledger", {}).items():
        module = _modules[name]
        for field, value in times.items():
            setattr(module, field, getattr(module, field) + value)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The modules that took the most time, and how much of it was in-process dbt."""
    if not _modules:
        return
    total = ModuleTime(
        sum(m.wall for m in _modules.values()),
        sum(m.dbt_commands for m in _modules.values()),
        sum(m.dbt_seconds for m in _modules.values()),
        sum(m.engine_commands for m in _modules.values()),
        sum(m.engine_seconds for m in _modules.values()),
    )
    write = terminalreporter.write_line
    terminalreporter.section("where the time goes (modules by wall time)")
    write(
        f"{'module':<34}{'wall s':>9}{'dbt cmds':>10}{'dbt s':>9}{'engine cmds':>13}"
        f"{'engine s':>10}{'other s':>9}"
    )
    ranked = sorted(_modules.items(), key=lambda item: -item[1].wall)
    for name, m in [*ranked[:SHOWN_MODULES], ("all modules", total)]:
        write(
            f"{name:<34}{m.wall:>9.0f}{m.dbt_commands:>10}{m.dbt_seconds:>9.0f}"
            f"{m.engine_commands:>13}{m.engine_seconds:>10.0f}"
            f"{max(0.0, m.wall - m.dbt_seconds - m.engine_seconds):>9.0f}"
        )
