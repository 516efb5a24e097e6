"""Shared fixtures: real servers on Unix sockets in short temp dirs, the mini dataset.

Under CI=true a skipped test fails the run unless tests/skip_allowlist.toml allows
it (tests/skip_policy.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
MINI = TESTS / "fixtures" / "mini"
sys.path.insert(0, str(TESTS))

import skip_policy  # noqa: E402  (found through the line above)


def pytest_configure(config: pytest.Config) -> None:
    skip_policy.install(config)


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short directory for Unix sockets (paths are limited to 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="apt-", dir="/tmp"))
    yield path
    for child in path.iterdir():
        child.unlink()
    path.rmdir()


@pytest.fixture
def mini() -> Path:
    return MINI


@pytest.fixture
def helper_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let `apmbench-grpc serve helpers.systems:Class` subprocesses import the test systems."""
    existing = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", f"{TESTS}{os.pathsep}{existing}" if existing else str(TESTS))
