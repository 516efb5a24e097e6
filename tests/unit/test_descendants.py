"""`descendants` (runtimes/base.py): the same tree psutil finds, without its table scan."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import psutil

from apmbench.harness.runtimes.base import descendants

# A child that forks a grandchild from a second thread: the kernel lists that one under
# the thread's task, not the main one, and a reader of the main task alone misses it.
TREE = """
import subprocess, sys, threading, time
kids = []
t = threading.Thread(target=lambda: kids.append(subprocess.Popen(["sleep", "30"])))
t.start(); t.join()
kids.append(subprocess.Popen(["sh", "-c", "sleep 30 & wait"]))
print("up", flush=True)
time.sleep(30)
"""


def test_descendants_match_psutil_across_threads_and_levels() -> None:
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        deadline = time.monotonic() + 5
        expected: set[int] = set()
        while time.monotonic() < deadline:
            expected = {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
            if len(expected) == 3:  # the thread's sleep, sh, and sh's sleep
                break
            time.sleep(0.05)
        assert len(expected) == 3
        found = descendants(proc.pid)
        assert set(found) == expected
        assert len(found) == len(set(found))
        mine = descendants(os.getpid())
        assert proc.pid in mine and expected <= set(mine)
    finally:
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.kill()
        proc.wait()
    assert descendants(proc.pid) == []


def test_a_thread_forked_child_is_found() -> None:
    child = None
    started = threading.Event()

    def fork() -> None:
        nonlocal child
        child = subprocess.Popen(["sleep", "30"])
        started.set()

    threading.Thread(target=fork).start()
    assert started.wait(5) and child is not None
    try:
        assert child.pid in descendants(os.getpid())
    finally:
        child.kill()
        child.wait()
