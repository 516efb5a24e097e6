"""A test's time limit grows with how loaded the machine is when the test starts.

pytest-timeout's limit (pyproject's `timeout`, or a test's own `timeout` mark) is what the
test may take on the quiet 2-core reference machine. On a loaded machine every test takes
longer, and a fixed limit failed healthy tests: CI at load average 12-23 saw two tests
past 300 s that take 100-150 s quiet. So each worker times suite_timing's probe (a fixed
piece of pure Python) every few seconds, and each test's limit is multiplied by the
machine's slowdown: the larger of the recent and the whole-run median probe, over the
reference machine's quiet probe (tests/time_budget.toml's `reference_probe_s`), between
1 and MAX_SCALE. A test that hangs still fails, later in proportion.
"""

from __future__ import annotations

import statistics
from collections.abc import Generator, Sequence
from pathlib import Path

import pytest
import suite_timing

NAME = "apmbench-load-timeouts"
MAX_SCALE = 8.0
"""A hung test fails after at most this many times its quiet limit (300 s: 40 min)."""
RECENT = 6
"""The probes (one every suite_timing.PROBE_EVERY_S) that make the recent median."""
BUDGET = Path(__file__).with_name("time_budget.toml")


def slowdown(samples: Sequence[float], reference_s: float) -> float:
    """How many times slower than the quiet reference the probes say this machine is now."""
    if not samples:
        return 1.0
    recent = statistics.median(samples[-RECENT:])
    whole = statistics.median(samples)
    return min(MAX_SCALE, max(1.0, max(recent, whole) / reference_s))


def limit_of(item: pytest.Item) -> float | None:
    """The item's quiet limit in seconds: its closest `timeout` mark, else the ini's."""
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        given = marker.args[0] if marker.args else marker.kwargs.get("timeout")
        if given is not None:
            return float(given)
    configured = item.config.getini("timeout")
    return float(configured) if configured not in (None, "") else None


class LoadTimeouts:
    def __init__(self, reference_s: float) -> None:
        self.reference_s = reference_s
        self.prober = suite_timing.Prober()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.prober.start()

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.prober.stop()

    # Before pytest-timeout's own wrapper reads the item's mark and arms its timer.
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        quiet = limit_of(item)
        if quiet is not None and quiet > 0:
            scale = slowdown(list(self.prober.samples), self.reference_s)
            item.add_marker(pytest.mark.timeout(round(quiet * scale, 1)), append=False)
        yield


def install(config: pytest.Config) -> None:
    """Register in each process that runs tests (an xdist worker, or the only process)."""
    if not config.pluginmanager.has_plugin("timeout") or config.pluginmanager.has_plugin(NAME):
        return
    controller = not hasattr(config, "workerinput") and config.getoption("numprocesses", None)
    if controller:
        return  # under pytest-xdist the controller runs no test
    reference = suite_timing.Budget.latest(BUDGET).reference_probe_s
    config.pluginmanager.register(LoadTimeouts(reference), NAME)
