"""Every page a start brings into the kernel's caches while it serves leaves with it.

Page-cache residency is a bit per page of every file a system can read (its package, the
venv, system libraries), and the dentry cache a bit per name it looks up (a name that does
not exist included): both are shared by every process on the host and outlive the process
that set them. A system that exports 4 bytes could otherwise keep its log there and let the
next start (or a fork, or a spare) read the bits back by timing or its own major-fault
counter (red teams 3 and 4). The seccomp filter makes eviction a no-op (fadvise,
MADV_COLD, MADV_PAGEOUT), so a start can only *set* bits; the memory cgroup a start serves
in is charged with every page, dentry and inode it brings in, and reclaiming that cgroup
when the start stops clears every bit it set:

- a start loads in a cgroup whose charges are kept: what it reads then (interpreter,
  libraries, weights) was read before it saw any data, so the next start loads as fast;
- once it serves (before the harness sends it anything), all of its processes move, with
  the start frozen, into its serve cgroup;
- when it has stopped, the kernel reclaims everything charged to the serve cgroup (cgroup
  v1 `memory.force_empty`, v2 `memory.reclaim`).

Processes and template starts are born in their own cgroups (start_cgroups.py). A
container is born in the engine's cgroup for it: `in_container_cgroup` nests the serve
cgroup there, so the container's memory limit and the engine's statistics still cover it,
and the move happens while the container is paused (`docker pause`).

What this does not close (docs/guarantees.md): global memory pressure, and what a spare
sees while it loads beside a live system.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.errors import RuntimeStartError
from apmbench.harness.runtimes.start_cgroups import CGROUP_ROOT, _members, _rmdir, reclaim


@dataclass
class ServeCgroup:
    """A container's serve cgroup, nested in the container's own memory cgroup."""

    path: Path
    source: Path
    """The container's memory cgroup, where its processes are born."""
    version: int

    def serving(self) -> None:
        """Move every process of the container in; call it with the container paused, so
        that none is born behind the move. One left behind fails the start."""
        self.path.mkdir(exist_ok=True)
        for _ in range(20):
            left = _members(self.source)
            if not left:
                return
            for pid in left:
                with contextlib.suppress(OSError):  # gone meanwhile
                    (self.path / "cgroup.procs").write_text(str(pid))
        if _members(self.source):
            raise RuntimeStartError(
                "processes of the container could not be moved into its serve cgroup: the "
                "page-cache reset would miss them, so the start is refused"
            )

    def evict(self) -> int:
        """Reclaim what it made resident (its processes dead or frozen)."""
        return reclaim(self.path, self.version)

    def release(self) -> int:
        """After the container stopped: kill what is left, reclaim, remove the cgroup."""
        if not self.path.exists():
            return 0
        for _ in range(100):
            left = _members(self.path)
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        reclaimed = self.evict()
        _rmdir(self.path)
        return reclaimed


def in_container_cgroup(init_pid: int) -> ServeCgroup | None:
    """A serve cgroup nested in a container's own memory cgroup (found through its init's
    pid as this kernel sees it). None where there is none to nest in (an engine in a VM, a
    harness that is not root, cgroup v2, where no process may live beside a child cgroup
    that has controllers)."""
    try:
        lines = Path(f"/proc/{init_pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            directory = CGROUP_ROOT / "memory" / path.lstrip("/")
            if not os.access(directory, os.W_OK):
                return None
            return ServeCgroup(directory / "apmbench-serve", directory, 1)
    return None
