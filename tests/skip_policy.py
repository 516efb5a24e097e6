"""Under CI=true a skipped test fails the run, unless tests/skip_allowlist.toml allows it.

A skip in CI means a check did not run while the run still reads green. CI (.ci/run)
installs every tool and extra the tests use, so a skip there is a missing tool or a
broken install. The few tests CI legitimately cannot run are listed, each with its
reason, in tests/skip_allowlist.toml (APMBENCH_SKIP_ALLOWLIST names another file).

A test that skips (a `skip`/`skipif` mark, `pytest.skip` in a test or a fixture) is
reported as failed, with the skip's reason and how to fix it. A module skipped while it
is collected (a module-level `pytest.importorskip`) has no test to fail: it is named in
a summary section and the session exits 1. With CI unset a skip stays a skip.

tests/conftest.py installs this plugin; `-p skip_policy` (tests/ on sys.path) does too.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ALLOWLIST = Path(__file__).resolve().parent / "skip_allowlist.toml"
ALLOWLIST_ENV = "APMBENCH_SKIP_ALLOWLIST"
NAME = "apmbench-skip-policy"


def ci_requires_every_test() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@dataclass(frozen=True)
class Allowed:
    node: str
    """An fnmatch pattern on the node id (`tests/x/test_y.py::test_z[param]`)."""
    skip: str
    """Text the skip's reason must contain; empty allows any reason."""
    why: str
    """Why CI cannot run it (reviewed)."""

    def covers(self, nodeid: str, reason: str) -> bool:
        return fnmatch.fnmatchcase(nodeid, self.node) and self.skip in reason


def load_allowlist(path: Path) -> list[Allowed]:
    """The entries of `path`; a malformed one (no node, or no reason why) is an error."""
    data = tomllib.loads(path.read_text())
    entries = []
    for i, entry in enumerate(data.get("allow", [])):
        node, why = str(entry.get("node", "")).strip(), str(entry.get("why", "")).strip()
        if not node or not why:
            raise pytest.UsageError(f"{path}: entry {i + 1} needs both `node` and `why`")
        unknown = set(entry) - {"node", "skip", "why"}
        if unknown:
            raise pytest.UsageError(f"{path}: entry {i + 1} has unknown keys {sorted(unknown)}")
        entries.append(Allowed(node, str(entry.get("skip", "")), why))
    return entries


def skip_reason(longrepr: Any) -> str:
    """The reason a skipped report gives (its longrepr is (path, line, 'Skipped: reason'))."""
    is_triple = isinstance(longrepr, tuple) and len(longrepr) == 3
    text = str(longrepr[2]) if is_triple else str(longrepr)
    return text.removeprefix("Skipped: ")


def advice(nodeid: str, reason: str, allowlist: Path) -> str:
    if allowlist.is_relative_to(Path.cwd()):
        allowlist = allowlist.relative_to(Path.cwd())
    return (
        f"{nodeid} skipped under CI=true: {reason}\n"
        "CI must run every test. Fix it by installing what the test needs (.ci/run installs "
        "the system tools, `make install` the extras), or, if CI cannot run it at all (say it "
        f"needs a GPU), add it to {allowlist} with the reason why."
    )


class SkipPolicy:
    def __init__(self, allowlist: Path) -> None:
        self.path = allowlist
        self.allowed = load_allowlist(allowlist) if allowlist.exists() else []
        self.unrun_modules: list[tuple[str, str]] = []

    def is_allowed(self, nodeid: str, reason: str) -> bool:
        return any(a.covers(nodeid, reason) for a in self.allowed)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        reason = skip_reason(report.longrepr)
        if self.is_allowed(report.nodeid, reason):
            return
        report.outcome = "failed"
        report.longrepr = advice(report.nodeid, reason, self.path)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.CollectReport = outcome.get_result()
        if report.skipped:
            reason = skip_reason(report.longrepr)
            if not self.is_allowed(report.nodeid, reason):
                self.unrun_modules.append((report.nodeid, reason))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.unrun_modules:
            return
        terminalreporter.section("skipped while collected, not allowed under CI=true", red=True)
        for nodeid, reason in self.unrun_modules:
            terminalreporter.line(advice(nodeid, reason, self.path))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.unrun_modules and exitstatus in (0, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def install(config: pytest.Config) -> None:
    """Register the policy once, where CI requires every test to run."""
    if not ci_requires_every_test() or config.pluginmanager.has_plugin(NAME):
        return
    allowlist = Path(os.environ.get(ALLOWLIST_ENV) or ALLOWLIST)
    config.pluginmanager.register(SkipPolicy(allowlist), NAME)


def pytest_configure(config: pytest.Config) -> None:
    install(config)
