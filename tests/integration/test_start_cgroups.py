"""Every process of a start is born in the start's cgroups and stays in them (red team 4's
escape: a fork chain beside 100 ballast processes outran a harness that moved a start's
process tree into its serve cgroup, and lived on in the harness's own cgroup, where the
names it cached were never reclaimed). Fresh and template starts."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import sandboxed_process
from apmbench.harness.runtimes.sandbox import find_bwrap
from apmbench.harness.runtimes.start_cgroups import PIDS_MAX, StartCgroups

SYSTEM = "tests.helpers.fork_chain:ForkChain"


PF_EXITING = 0x00000004  # include/linux/sched.h


def exiting(pid: int) -> bool:
    """The kernel shows a v1 cgroup of a task that has begun to exit as "/" (proc_cgroup_show:
    "on traditional hierarchies, all zombie tasks show up as belonging to the root cgroup"),
    and it sets PF_EXITING well before the task is a zombie: on a loaded machine a chain
    member that is tearing down its memory reads as in "/" for milliseconds."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    flags = int(stat.rsplit(")", 1)[1].split()[6])  # field 9, after comm's ")"
    return bool(flags & PF_EXITING)


def memory_cgroup(pid: int) -> str | None:
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 2)[2] for line in lines if ":memory:" in line), None)


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fresh", "template"])
def test_no_process_of_a_start_lives_outside_its_cgroups(
    tmp_path: Path, start: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if find_bwrap() is None:
        pytest.fail("bubblewrap is not installed (apt-get install -y bubblewrap)")
    if not StartCgroups().available():
        pytest.fail("start cgroups need root and the memory, freezer and pids controllers")
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    rt = sandboxed_process(
        SYSTEM, tmp_path / "system.log", Deadlines(), 120, sandbox=True, start=start
    )
    try:
        rt.start()
        assert rt._proc is not None and rt._group is not None
        root = rt._proc.pid
        seen, outside = 0, []
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            try:
                family = psutil.Process(root).children(recursive=True)
            except psutil.Error:
                break
            for proc in family:
                try:
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        continue  # exited: the kernel shows it in no cgroup
                except psutil.Error:
                    continue
                where = memory_cgroup(proc.pid)
                if where is None:
                    continue  # gone meanwhile
                seen += 1
                if not where.endswith("-serve"):
                    try:
                        if proc.status() == psutil.STATUS_ZOMBIE:
                            continue  # it exited while it was read
                    except psutil.Error:
                        continue
                    if where == "/" and exiting(proc.pid):
                        continue  # exiting: v1 shows it in the root, it runs no more code
                    outside.append((proc.pid, where))
            time.sleep(0.05)
        assert seen > 100, "the chain and its ballast ran"
        assert outside == [], outside[:5]
        assert rt.describe()["page_cache"]["pids_max"] == PIDS_MAX
    finally:
        rt.stop()
