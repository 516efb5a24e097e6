"""How much GPU memory a serving process tree holds, and how many more copies of it fit,
read from nvidia-smi.

`SparePlan.measure` (spare_plan.py) asks once a start serves: a process tree that has an
NVIDIA device open (`holds_gpu`) gets as many spares as the least free GPU holds beside it
(`gpu_spares`, over `nvidia_smi`'s CSV), none without nvidia-smi to say, unless the user gave
a budget (`SparePlan.gpu_cap`). Which devices a sandboxed box gets at all is gpu.py's
business, not this module's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess


def holds_gpu(pid: int) -> bool:
    """Whether the process has an NVIDIA device open (a CUDA context)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/dev/nvidia"):
                return True
    return False


def nvidia_smi() -> tuple[str, str] | None:
    """nvidia-smi's compute apps (pid, MiB used) and free memory per GPU (MiB), as CSV."""
    try:
        apps = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout  # fmt: skip
        free = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return apps, free


def gpu_spares(pids: set[int], smi: tuple[str, str] | None) -> int:
    """How many more copies of what `pids` hold on the GPU fit in its free memory (the least
    free GPU counts: which one a spare lands on is the system's choice); 0 when unknown."""
    if smi is None:
        return 0
    apps, free = smi
    used = 0
    for line in apps.splitlines():
        pid, _, mib = (x.strip() for x in line.partition(","))
        if pid.isdigit() and int(pid) in pids and mib.isdigit():
            used += int(mib)
    frees = [int(x) for x in free.split() if x.strip().isdigit()]
    if used <= 0 or not frees:
        return 0
    return min(frees) // used
