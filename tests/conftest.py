"""Shared fixtures: real servers on Unix sockets in short temp dirs, the mini dataset, and
what the session builds once for every pytest-xdist worker (the tiny models, the tiny
synthetic dataset: tests/helpers/shared.py).

Under CI=true a skipped test fails the run unless tests/skip_allowlist.toml allows
it (tests/skip_policy.py). tests/suite_timing.py prints the slowest tests and the serial
total, and with --time-budget holds the suite to tests/time_budget.toml; each test's time
limit grows with the machine's load (tests/load_timeouts.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
MINI = TESTS / "fixtures" / "mini"
sys.path.insert(0, str(TESTS))

import exclusive  # noqa: E402  (found through the line above)
import load_timeouts  # noqa: E402
import skip_policy  # noqa: E402
import suite_timing  # noqa: E402
from helpers.shared import Shared  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    suite_timing.pytest_addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    skip_policy.install(config)
    suite_timing.install(config)
    exclusive.install(config)
    load_timeouts.install(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order pytest-xdist hands out modules in (`make test`: `--dist loadscope
    --no-loadscope-reorder`, a module is one unit of work, so its module-scoped fixtures are
    built once): the modules with the most slow tests first, so that the run does not end
    waiting on one worker's long module, and a module holding an `exclusive` test last,
    where waiting for the others to finish costs least (tests/exclusive.py). A module keeps
    its own order."""

    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    slow: dict[str, int] = {}
    exclusive: set[str] = set()
    for item in items:
        slow[module(item)] = slow.get(module(item), 0) + (
            item.get_closest_marker("slow") is not None
        )
        if item.get_closest_marker("exclusive") is not None:
            exclusive.add(module(item))
    first = {m: i for i, m in reversed(list(enumerate(module(i) for i in items)))}
    items.sort(key=lambda i: (module(i) in exclusive, -slow[module(i)], first[module(i)]))


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    return Shared.of(tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_vlm(shared: Shared) -> Callable[[str], Path]:
    """`tiny_vlm(family)`: the tiny random Qwen-VL checkpoint of that family ("qwen2_5_vl",
    "qwen3_vl"), built once for the session and readable by any uid (a container's)."""

    def get(family: str) -> Path:
        def make(path: Path) -> None:
            from helpers.tiny_qwen_vl import build_tiny_qwen_vl, make_readable

            build_tiny_qwen_vl(path, family)
            make_readable(path)

        return shared.build(f"tiny-{family}", make)

    return get


@pytest.fixture(scope="session")
def tiny() -> Path:
    """The `tiny` synthetic APM-Bench dataset, seed 0, from the harness's own cache
    ($APMBENCH_CACHE; generated once, under its lock, whichever worker asks first)."""
    from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

    return synthetic_dataset("tiny", 0)


@pytest.fixture(scope="session")
def reference_runs(shared: Shared) -> Path:
    """A folder of finished runs: `null`, `recent-frames`, `text-log` and `frame-archive` on
    every built-in suite's `tiny` (seed 0), and `null` on EgoProbe with --no-sandbox
    (tests/helpers/reference_runs.py); made once for the session, whichever worker asks
    first (about two minutes on the 2-core CI machine)."""
    from helpers.reference_runs import make_reference_runs

    return shared.build("reference-runs", make_reference_runs)


ONE_FORK_TASKS = ("ER", "EST", "TR", "ACR", "CT", "OCR", "STU", "TPG")


@pytest.fixture(scope="session")
def tiny_one_fork(tiny: Path, shared: Shared) -> Path:
    """`tiny` with its seven multiple-choice tasks and one forked task only: the same four
    sessions and videos, every session's export crossing a restart, and TPG, whose marker
    in the second session makes its forks import the first session's export in a fresh
    process; 7 starts of a system in `restart` mode where the whole of `tiny` takes 21.
    For systems whose every start loads a model (seconds of CPU each)."""

    def make(path: Path) -> None:
        shutil.copytree(tiny, path, dirs_exist_ok=True, copy_function=os.link)
        for candidates in (path / "candidates").glob("*.json"):
            if candidates.stem not in ONE_FORK_TASKS:
                candidates.unlink()

    return shared.build("tiny-one-fork", make)


NODE_TEMPLATE = TESTS.parent / "containers" / "template-node"


@pytest.fixture(scope="session")
def node_template(shared: Shared) -> Path:
    """containers/template-node with its npm dependencies installed (`npm ci`, once, under
    a lock: two workers' `npm ci` in one directory would remove each other's files)."""
    import subprocess

    if shutil.which("node") is None or shutil.which("npm") is None:
        message = "node is not installed (apt-get install -y nodejs npm)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)  # CI must have it (.ci/run installs it)
        pytest.skip(message)
    with shared.lock("npm-template-node"):
        if not (NODE_TEMPLATE / "node_modules" / "@grpc" / "grpc-js").is_dir():
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund"],
                cwd=NODE_TEMPLATE, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
    return NODE_TEMPLATE


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
