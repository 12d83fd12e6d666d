"""Where the suite's time goes: each test module's wall time and its in-process dbt commands.

The terminal summary lists the modules by wall time with the number and time of the dbt
commands they ran in the test session (``dbtRunner.invoke``, through ``project.dbt`` or an
in-process ``hashcdc`` command); the rest of a module's time is its own processes (a
``hashcdc`` subprocess starts a JVM), servers and queries. ``--durations`` gives the tests.
"""

from __future__ import annotations

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


def pytest_configure(config: pytest.Config) -> None:
    """Count the in-process dbt commands."""
    from dbt.cli.main import dbtRunner

    dbtRunner.invoke = timed_invoke(dbtRunner.invoke)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The modules that took the most time, and how much of it was in-process dbt."""
    if not _modules:
        return
    total = ModuleTime(
        sum(m.wall for m in _modules.values()),
        sum(m.dbt_commands for m in _modules.values()),
        sum(m.dbt_seconds for m in _modules.values()),
    )
    write = terminalreporter.write_line
    terminalreporter.section("where the time goes (modules by wall time)")
    write(f"{'module':<34}{'wall s':>9}{'dbt cmds':>10}{'dbt s':>9}{'other s':>9}")
    ranked = sorted(_modules.items(), key=lambda item: -item[1].wall)
    for name, m in [*ranked[:SHOWN_MODULES], ("all modules", total)]:
        write(
            f"{name:<34}{m.wall:>9.0f}{m.dbt_commands:>10}{m.dbt_seconds:>9.0f}"
            f"{m.wall - m.dbt_seconds:>9.0f}"
        )
