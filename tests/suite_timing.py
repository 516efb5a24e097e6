"""The suite's clock: the slowest tests, the serial total, and the budget it may not outgrow.

A test's time is the sum of its setup, call and teardown: what it costs the worker that
runs it. At the end of a run the process that sees every report (the controller under
pytest-xdist, else the only process) prints the 20 slowest tests, the serial total (the
sum over all tests: what one worker alone would take), the wall time and the workers.

With `--time-budget FILE` (`make test` passes tests/time_budget.toml) the run also fails
when the serial total has grown past the budget's latest entry by more than its
allowance. The total is scaled to the machine first, since the same suite takes longer on
a slower or busier machine: a thread of the controller times a fixed piece of pure Python
every few seconds for the whole run, and the serial total is multiplied by the budget's
`reference_probe_s` (that piece on the quiet machine the budget was measured on) over the
median probe of this run. Tests that wait (on a container, a deadline, a subprocess that
sleeps) are slowed less than the probe by a loaded machine, so the scaling errs towards
passing under load; on a quiet machine it is close to exact. A grown suite passes again
by a new `[[budget]]` entry whose note says why it grew.
"""

from __future__ import annotations

import statistics
import threading
import time
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

NAME = "apmbench-suite-timing"
SLOWEST = 20
PROBE_EVERY_S = 5.0
UNMARKED_SLOW_S = 10.0
"""A test outside tests/containers (which `make test-fast` leaves out by its path) that
takes longer than this without the `slow` mark is named in the summary, to be marked."""


def probe_s() -> float:
    """Wall seconds of a fixed piece of pure Python (about 20 ms on a quiet 2-core VM)."""
    started = time.perf_counter()
    total = 0
    for i in range(200_000):
        total += i * i % 7
    assert total > 0
    return time.perf_counter() - started


@dataclass(frozen=True)
class Budget:
    serial_s: float
    """The suite's serial total on the reference machine, scaled as above."""
    allowance: float
    """The share by which the scaled total may exceed `serial_s` before the run fails."""
    reference_probe_s: float
    """`probe_s()` on the reference machine, quiet, as `make test` runs it."""
    note: str

    @classmethod
    def latest(cls, path: Path) -> Budget:
        entries = tomllib.loads(path.read_text()).get("budget", [])
        if not entries:
            raise pytest.UsageError(f"{path}: no [[budget]] entry")
        entry = entries[-1]
        missing = {"serial_s", "allowance", "reference_probe_s", "note"} - set(entry)
        if missing or not str(entry.get("note", "")).strip():
            raise pytest.UsageError(f"{path}: the last [[budget]] entry lacks {sorted(missing)}")
        return cls(
            float(entry["serial_s"]),
            float(entry["allowance"]),
            float(entry["reference_probe_s"]),
            str(entry["note"]),
        )


class Prober:
    """Times `probe_s()` every PROBE_EVERY_S seconds in a daemon thread."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="suite-timing-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while True:
            self.samples.append(probe_s())
            if self._stop.wait(PROBE_EVERY_S):
                return

    def median_s(self) -> float:
        return statistics.median(self.samples) if self.samples else probe_s()


class SuiteTiming:
    def __init__(self, config: pytest.Config, budget_path: Path | None) -> None:
        self.config = config
        self.budget_path = budget_path
        self.seconds: dict[str, float] = defaultdict(float)
        self.marked_slow: set[str] = set()
        self.failed = False
        self.started = time.monotonic()
        self.prober = Prober()
        self.verdict: str | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.monotonic()
        self.prober.start()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration
        if "slow" in report.keywords:
            self.marked_slow.add(report.nodeid)
        if report.failed:
            self.failed = True

    def scaled_serial_s(self, budget: Budget) -> float:
        return sum(self.seconds.values()) * budget.reference_probe_s / self.prober.median_s()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.prober.stop()
        if self.budget_path is None or self.failed or exitstatus != 0:
            return
        budget = Budget.latest(self.budget_path)
        scaled = self.scaled_serial_s(budget)
        limit = budget.serial_s * (1 + budget.allowance)
        if scaled > limit:
            self.verdict = (
                f"the suite's serial time grew to {scaled:.0f} s (scaled to the reference "
                f"machine), past the budget of {budget.serial_s:.0f} s + "
                f"{budget.allowance:.0%} = {limit:.0f} s in {self.budget_path}. Make the new "
                "tests cheaper, or add a [[budget]] entry there whose note says why the "
                "suite grew."
            )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            self.verdict = (
                f"within budget: {scaled:.0f} s scaled serial time <= {limit:.0f} s "
                f"({budget.serial_s:.0f} s + {budget.allowance:.0%}, {self.budget_path.name})"
            )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.seconds:
            return
        wall = time.monotonic() - self.started
        serial = sum(self.seconds.values())
        tr = terminalreporter
        tr.section(f"suite timing: the {SLOWEST} slowest tests (setup + call + teardown)")
        ranked = sorted(self.seconds.items(), key=lambda kv: kv[1], reverse=True)
        for nodeid, seconds in ranked[:SLOWEST]:
            tr.line(f"{seconds:8.2f} s  {nodeid}")
        probe = self.prober.median_s()
        workers = getattr(self.config.option, "numprocesses", None) or 1
        tr.line(
            f"{len(self.seconds)} tests: serial total {serial:.1f} s, wall {wall:.1f} s, "
            f"{workers} worker(s), speed-up {serial / wall if wall else 0:.2f}x; "
            f"machine probe {probe * 1000:.1f} ms (median of {len(self.prober.samples)})"
        )
        unmarked = [
            n
            for n, t in ranked
            if t > UNMARKED_SLOW_S
            and n not in self.marked_slow
            and not n.startswith("tests/containers/")
        ]
        if unmarked:
            tr.line(f"not marked slow, yet over {UNMARKED_SLOW_S:g} s: {', '.join(unmarked)}")
        if self.verdict:
            tr.line(f"time budget: {self.verdict}", red=self.verdict.startswith("the suite"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--time-budget",
        type=Path,
        default=None,
        help="fail a passing run whose serial time, scaled to the machine, outgrew FILE's "
        "latest budget (tests/time_budget.toml)",
    )


def install(config: pytest.Config) -> None:
    """Register on the process that sees every report: the controller, not a worker."""
    if hasattr(config, "workerinput") or config.pluginmanager.has_plugin(NAME):
        return
    config.pluginmanager.register(SuiteTiming(config, config.getoption("--time-budget")), NAME)
