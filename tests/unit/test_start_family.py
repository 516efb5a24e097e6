"""What the harness moves, freezes and kills is only ever its own start's processes: a
pid that is not a descendant of the harness (0 and 1, its own parent, a pid another
program reused) gives an empty family (page_cache.start_family)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from apmbench.harness.runtimes.page_cache import start_family


def test_pids_that_are_not_ours_give_nothing() -> None:
    assert start_family(0) == []
    assert start_family(1) == []
    assert start_family(os.getppid()) == []  # the harness's parent: not a descendant
    assert start_family(os.getpid()) == []  # the harness itself
    assert start_family(2**22 + 12345) == []  # no such process


def test_a_child_and_its_children_are_the_family() -> None:
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 10
        family: list[int] = []
        while time.monotonic() < deadline and len(family) < 2:
            family = start_family(child.pid)
            time.sleep(0.05)
        assert family[0] == child.pid and len(family) == 2
    finally:
        subprocess.run(["pkill", "-P", str(child.pid)], check=False)
        child.kill()
        child.wait()
