"""`@pytest.mark.exclusive`: a test that must have the machine to itself.

Under pytest-xdist several tests run at once. A few cannot share the machine: a check
that reads engine-wide Docker state (every volume on the engine) or a measurement that
another test's load would distort. Such a test is marked `exclusive` and runs while no
other test does; it is neither skipped nor moved to another command.

The mechanism is a readers-writer lock on files in the session's shared directory
(tests/helpers/shared.py), held around each test's setup, call and teardown: every test
holds it shared, an exclusive one holds it alone. A test waiting for it alone first takes
a turnstile that every test passes through before it takes the lock shared, so new tests
queue behind it instead of starving it. Without xdist there is nothing to wait for.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Generator
from typing import IO

import pytest
from helpers.shared import Shared

MARK = "exclusive"
NAME = "apmbench-exclusive"


class Exclusive:
    def __init__(self) -> None:
        self.files: tuple[IO[bytes], IO[bytes]] | None = None

    def locks(self, config: pytest.Config) -> tuple[IO[bytes], IO[bytes]]:
        """(turnstile, gate), opened on first use: the session directory exists by then."""
        if self.files is None:
            root = Shared.of(config._tmp_path_factory).root  # type: ignore[attr-defined]
            self.files = (
                open(root / ".exclusive-turnstile.lock", "ab"),  # noqa: SIM115
                open(root / ".exclusive-gate.lock", "ab"),  # noqa: SIM115
            )
        return self.files

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        alone = item.get_closest_marker(MARK) is not None
        turnstile, gate = self.locks(item.config)
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(gate, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)


def install(config: pytest.Config) -> None:
    """On an xdist worker, take the lock around every test; elsewhere only declare the mark."""
    config.addinivalue_line(
        "markers", f"{MARK}: runs while no other test runs (tests/exclusive.py)"
    )
    if not os.environ.get("PYTEST_XDIST_WORKER") or config.pluginmanager.has_plugin(NAME):
        return
    config.pluginmanager.register(Exclusive(), NAME)
