"""The suite's time, kept visible: a pytest plugin (registered by tests/conftest.py) that
prints the session's wall time against its budget, the slowest modules, and what the
shared components cost to start.

A module's time is the sum of its tests' setup, call and teardown, less the set-up of any
session-scoped fixture (a shared broker, the Connect server) that one of its tests happened
to start first: that cost is the suite's, listed on its own line, not the module's.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

# make test's budget on the 2-core CI machine (tests/README.md).
BUDGET_S = 35 * 60
SLOWEST = 10


@dataclass
class _Clock:
    started: float = field(default_factory=time.monotonic)
    modules: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    tests: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    shared: dict[str, float] = field(default_factory=dict)
    shared_in: dict[str, str] = field(default_factory=dict)


def module_of(nodeid: str) -> str:
    """`tests/integration/test_x.py` of `tests/integration/test_x.py::test_y[param]`."""
    return nodeid.split("::", 1)[0]


class Budget:
    """The plugin object: one per session."""

    def __init__(self, times_file: str | None = None) -> None:
        self.clock = _Clock()
        self._current: str | None = None
        self._times_file = times_file

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        self._current = module_of(item.nodeid)
        yield
        self._current = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any) -> Iterator[None]:
        if fixturedef.scope != "session" or self._current is None:
            yield
            return
        started = time.monotonic()
        yield
        spent = time.monotonic() - started
        # pytest sets up a fixture's own dependencies before this hook: `spent` is its own.
        name = str(fixturedef.argname)
        self.clock.shared[name] = self.clock.shared.get(name, 0.0) + spent
        self.clock.shared_in.setdefault(name, self._current)
        self.clock.modules[self._current] -= spent

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        module = module_of(report.nodeid)
        self.clock.modules[module] += report.duration
        if report.when == "call":
            self.clock.tests[module] += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        wall = time.monotonic() - self.clock.started
        write = terminalreporter.write_line
        terminalreporter.section("time")
        write(f"suite wall time: {_minutes(wall)} (budget {_minutes(BUDGET_S)})")
        slowest = sorted(self.clock.modules.items(), key=lambda kv: kv[1], reverse=True)
        write(f"the {min(SLOWEST, len(slowest))} slowest modules:")
        for module, spent in slowest[:SLOWEST]:
            write(f"  {spent:8.1f} s  {self.clock.tests[module]:4d} tests  {module}")
        if self.clock.shared:
            write("shared components (started once, by the first module that used them):")
            for name, spent in sorted(self.clock.shared.items(), key=lambda kv: -kv[1]):
                write(f"  {spent:8.1f} s  {name}  (in {self.clock.shared_in[name]})")
        if self._times_file:
            self._write_times(wall, slowest)
        if wall > BUDGET_S:
            write(f"OVER BUDGET: {_minutes(wall)} is more than {_minutes(BUDGET_S)}",
                  red=True, bold=True)

    def _write_times(self, wall: float, slowest: list[tuple[str, float]]) -> None:
        """Every module's time, not only the slowest: where the next minute is to be found."""
        times = {"wall_s": round(wall, 1),
                 "modules": [{"module": m, "seconds": round(s, 1),
                              "tests": self.clock.tests[m]} for m, s in slowest],
                 "shared": {n: round(s, 1) for n, s in self.clock.shared.items()}}
        try:
            with open(self._times_file, "w", encoding="utf-8") as out:  # type: ignore[arg-type]
                json.dump(times, out, indent=1)
                out.write("\n")
        except OSError as exc:
            # The suite's own result stands; the file is a convenience.
            print(f"the modules' times could not be written to {self._times_file}: {exc}")


def _minutes(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s"
