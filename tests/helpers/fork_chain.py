"""Red team 4's escape from a start's cgroups, as a system: from its constructor on it runs
a chain of processes that each fork and exit within a millisecond, beside 100 sleeping
"ballast" processes that slow a harness walking the process tree. A harness that finds a
start's processes by walking the tree and moving what it found misses the chain (its pid
is gone by the time it is written), and the chain lives on outside the start's cgroups,
where what it caches is never reclaimed. A start born in its cgroups leaves it nowhere to
go."""

from __future__ import annotations

import subprocess
import sys

from apmbench.adapters.systems.null import NullSystem

CHAIN = """
import os, time
end = time.monotonic() + 60
while time.monotonic() < end:
    if os.fork():
        os._exit(0)
    time.sleep(0.001)
"""
BALLAST = 100


class ForkChain(NullSystem):
    def __init__(self) -> None:
        super().__init__()
        self.ballast = [
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            for _ in range(BALLAST)
        ]
        subprocess.Popen([sys.executable, "-c", CHAIN])
