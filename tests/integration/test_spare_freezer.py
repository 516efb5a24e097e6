"""Spares frozen once loaded (hostile methods, third round, attack 6's listener): a spare
whose constructor starts a busy thread uses no CPU once its socket is up, in fresh and
template boxes, and is thawed when promoted. Unconfined (no freezer) the same spare spins:
the test can see what it closes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.base import tree_cpu_s
from apmbench.harness.runtimes.process import ProcessRuntime, sandboxed_process
from apmbench.harness.runtimes.sandbox import find_bwrap
from apmbench.harness.runtimes.start_cgroups import StartCgroups

SYSTEM = "tests.helpers.spinning_spare:SpinningSystem"


def spare_cpu(rt: ProcessRuntime, wait_s: float = 6.0) -> float:
    """CPU seconds the waiting spares used over one second, once they had time to load."""
    rt.start()
    rt.expect_restarts()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if all(s.group is None or s.group.frozen for s in rt._spares):
            break
        time.sleep(0.1)
    pids = [s.proc.pid for s in rt._spares]
    assert pids
    before = sum(tree_cpu_s(p) or 0.0 for p in pids)
    time.sleep(1.0)
    return sum(tree_cpu_s(p) or 0.0 for p in pids) - before


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fresh", "template"])
def test_a_loaded_spare_runs_nothing_until_promoted(
    tmp_path: Path, start: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if find_bwrap() is None:
        pytest.fail("bubblewrap is not installed (apt-get install -y bubblewrap)")
    if not StartCgroups().available():
        pytest.fail("freezing spares needs root and a freezer cgroup (CI runs as root)")
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    rt = sandboxed_process(
        SYSTEM, tmp_path / "system.log", Deadlines(), 60, sandbox=True, spare=True, start=start
    )
    try:
        used = spare_cpu(rt)
        assert used < 0.05, f"a loaded spare used {used:.2f} s of CPU in 1 s"
        client = rt.restart()  # promoted: thawed, and it serves
        client.describe()
        assert rt.describe()["spares"]["frozen_once_loaded"] is True
    finally:
        rt.stop()


@pytest.mark.slow
def test_unconfined_the_same_spare_spins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    rt = sandboxed_process(
        SYSTEM, tmp_path / "system.log", Deadlines(), 60, sandbox=False, spare=True
    )
    try:
        assert spare_cpu(rt, wait_s=3.0) > 0.3
    finally:
        rt.stop()
