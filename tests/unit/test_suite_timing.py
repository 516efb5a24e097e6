"""The suite's own machinery: the time budget fails a run that outgrew it, and an
exclusive test never overlaps another under xdist."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
TESTS = Path(__file__).resolve().parents[1]

CONFTEST = """
import suite_timing, exclusive

def pytest_addoption(parser):
    suite_timing.pytest_addoption(parser)

def pytest_configure(config):
    config.addinivalue_line("markers", "exclusive: alone")
    suite_timing.install(config)
    exclusive.install(config)
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", f"{TESTS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    pytester.makeconftest(CONFTEST)
    return pytester


def _budget(path: Path, serial_s: float) -> Path:
    path.write_text(
        f"[[budget]]\nserial_s = {serial_s}\nallowance = 0.1\nreference_probe_s = 0.02\n"
        'note = "test"\n'
    )
    return path


def test_a_run_past_its_budget_fails_and_one_within_passes(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_sleep="import time\ndef test_a():\n    time.sleep(0.5)\n")
    over = inner.runpytest_subprocess("--time-budget", str(_budget(inner.path / "b.toml", 0.01)))
    assert over.ret != 0
    over.stdout.fnmatch_lines(["*past the budget of 0 s*"])
    within = inner.runpytest_subprocess("--time-budget", str(_budget(inner.path / "c.toml", 1000)))
    assert within.ret == 0
    within.stdout.fnmatch_lines(["*within budget*"])


def test_an_exclusive_test_runs_alone(inner: pytest.Pytester) -> None:
    log = inner.path / "log"
    body = f"""
import os, time, pytest
LOG = {str(log)!r}

def _span(name):
    with open(LOG, "a") as f:
        f.write(f"start {{name}} {{time.monotonic()}}\\n")
    time.sleep(0.4)
    with open(LOG, "a") as f:
        f.write(f"end {{name}} {{time.monotonic()}}\\n")

@pytest.mark.parametrize("k", range(6))
def test_shared(k):
    _span(f"shared{{k}}")

@pytest.mark.exclusive
def test_alone():
    _span("alone")
"""
    inner.makepyfile(test_mixed=body)
    done = inner.runpytest_subprocess("-n", "3", "-p", "xdist")
    assert done.ret == 0, done.stdout.str()
    spans: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        _, name, at = line.split()
        spans.setdefault(name, []).append(float(at))
    alone = spans.pop("alone")
    assert len(spans) == 6
    for start, end in spans.values():
        assert end <= alone[0] or start >= alone[1], "a test overlapped the exclusive one"
