"""Every page a start brings into the page cache while it serves leaves with it.

Page-cache residency is a bit per page of every file a system can read (its package, the
venv, system libraries), shared by every process on the host and outliving the process
that set it. A system that exports 4 bytes could otherwise keep its log there: make pages
resident by reading them, and let the next start (or a fork, or a spare) read the bits
back by timing or its own major-fault counter. The seccomp filter makes eviction a no-op
(fadvise, MADV_COLD, MADV_PAGEOUT), so a start can only *set* bits; this module clears
every bit a start set while it served:

- a start loads in the harness's own memory cgroup: what it reads then (its interpreter,
  libraries, weights) was read before it saw any data, so it stays cached and the next
  start loads as fast;
- once it serves (`serving`, before the harness sends it anything), every process of the
  start is moved into a memory cgroup of its own; a page first read after that is charged
  to it;
- when it has stopped (`release`), the kernel reclaims every page charged to that cgroup
  (cgroup v1 `memory.force_empty`, v2 `memory.reclaim`), so residency is again what it
  was before the start served, whatever the start read.

A page already resident when the start read it is not charged to it and stays: it carries
nothing, since the start did not make it resident. What this does not close (written in
docs/guarantees.md): a spare reading pages while the live system serves (concurrent, not
across a stop), and global memory pressure.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

CGROUP_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count(1)


def start_family(root_pid: int) -> list[int]:
    """`root_pid` and its descendants, only where each is a descendant of this harness: a
    pid that is not ours (0, 1, a pid reused by another program, the harness itself) is
    never moved, frozen or killed. Empty when `root_pid` is gone or not ours."""
    me = os.getpid()
    try:
        root = psutil.Process(root_pid)
        if root_pid <= 1 or me not in {p.pid for p in root.parents()}:
            return []
        family = [root, *root.children(recursive=True)]
    except psutil.Error:
        return []
    return [p.pid for p in family if p.pid > 1 and p.pid != me]


def _own_memory_cgroup() -> tuple[Path, int] | None:
    """The directory of this process's memory cgroup and the cgroup version, if writable."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            directory = CGROUP_ROOT / "memory" / path.lstrip("/")
            return (directory, 1) if os.access(directory, os.W_OK) else None
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if number == "0" and (CGROUP_ROOT / "cgroup.controllers").exists():
            directory = CGROUP_ROOT / path.lstrip("/")
            wanted = (directory / "cgroup.subtree_control").read_text().split()
            return (directory, 2) if "memory" in wanted and os.access(directory, os.W_OK) else None
    return None


@dataclass
class ServeCgroup:
    """The memory cgroup one start serves in."""

    path: Path
    version: int
    moved: list[int] = field(default_factory=list)

    def serving(self, root_pid: int) -> None:
        """Move the start (the process `root_pid` and all its descendants) in. Repeated
        until no process of the start is left outside: one forked meanwhile is born where
        its parent was."""
        self.path.mkdir(exist_ok=True)
        procs = self.path / "cgroup.procs"
        for _ in range(50):
            family = start_family(root_pid)
            outside = [pid for pid in family if pid not in self._members()]
            if not outside:
                return
            for pid in outside:
                with contextlib.suppress(OSError):  # gone meanwhile
                    procs.write_text(str(pid))
                    self.moved.append(pid)

    def _members(self) -> set[int]:
        try:
            return {int(x) for x in (self.path / "cgroup.procs").read_text().split()}
        except OSError:
            return set()

    def release(self) -> int:
        """After the start stopped: kill what is left of it, evict every page charged to
        it, remove the cgroup. Returns the bytes of page cache evicted."""
        if not self.path.exists():
            return 0
        for _ in range(100):
            left = self._members()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        cached = self.evict()
        for _ in range(100):
            try:
                self.path.rmdir()
                break
            except OSError as e:
                if e.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                    break
                time.sleep(0.01)
        return cached

    def evict(self) -> int:
        """Reclaim every page charged to the cgroup (its processes dead or frozen, so none
        is read again meanwhile). Returns the bytes of page cache it held."""
        cached = self._cached_bytes()
        with contextlib.suppress(OSError):  # v1 says EBUSY for the anonymous memory it kept
            if self.version == 1:
                (self.path / "memory.force_empty").write_text("0")
            else:
                (self.path / "memory.reclaim").write_text(str(max(cached, 1 << 20)))
        return cached

    def _cached_bytes(self) -> int:
        try:
            stat = (self.path / "memory.stat").read_text().splitlines()
        except OSError:
            return 0
        key = "cache" if self.version == 1 else "file"
        for line in stat:
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
        return 0


class PageCacheReset:
    """Hands each start a `ServeCgroup` where this host lets the harness make memory
    cgroups (root, cgroup v1 or v2 with the memory controller); elsewhere `why` says why
    not and starts get None (the manifest records it)."""

    def __init__(self) -> None:
        own = _own_memory_cgroup()
        self.why = ""
        self.base: Path | None = None
        self.version = 0
        if own is None:
            self.why = (
                "no writable memory cgroup (run the harness as root on a host with the "
                "memory controller)"
            )
            return
        directory, self.version = own
        base = directory / f"apmbench-{os.getpid()}-{next(_counter)}"
        try:
            base.mkdir()
            if self.version == 2:
                (base / "cgroup.subtree_control").write_text("+memory")
        except OSError as e:
            self.why = f"cannot make a memory cgroup under {directory}: {e.strerror}"
            with contextlib.suppress(OSError):
                base.rmdir()
            return
        self.base = base

    @property
    def active(self) -> bool:
        return self.base is not None

    def for_start(self, number: int) -> ServeCgroup | None:
        if self.base is None:
            return None
        return ServeCgroup(self.base / f"start-{number}", self.version)

    def close(self) -> None:
        base, self.base = self.base, None
        if base is None:
            return
        for child in base.iterdir() if base.exists() else ():
            if child.is_dir():
                ServeCgroup(child, self.version).release()
        with contextlib.suppress(OSError):
            base.rmdir()

    def describe(self) -> dict[str, object]:
        return {
            "reset": self.active,
            **({"cgroup": f"v{self.version}"} if self.active else {"why_not": self.why}),
            "rule": "pages a start makes resident while it serves are evicted when it stops",
        }


def in_container_cgroup(init_pid: int) -> ServeCgroup | None:
    """A serve cgroup nested in a container's own memory cgroup (found through its init's
    pid as this kernel sees it), so the container's memory limit and the engine's stats
    still cover it. None where there is none to nest in (an engine in a VM, a harness
    that is not root)."""
    try:
        lines = Path(f"/proc/{init_pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            directory = CGROUP_ROOT / "memory" / path.lstrip("/")
            version = 1
            break
        if line.startswith("0::") and (CGROUP_ROOT / "cgroup.controllers").exists():
            directory, version = CGROUP_ROOT / path.lstrip("/"), 2
            break
    else:
        return None
    if not os.access(directory, os.W_OK):
        return None
    if version == 2:
        # v2 lets no process live beside a child cgroup that has controllers: the
        # container's own cgroup holds its processes, so there is nothing to nest in.
        return None
    return ServeCgroup(directory / "apmbench-serve", version)
