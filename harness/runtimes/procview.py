"""A per-box view of /proc with no live host-wide counter: frozen copies bound over them.

A live system and its spares (the next starts, launched while it serves) run at the same
time, and /proc shows every box the host's counters. Shmem in /proc/meminfo counts every
tmpfs page, a box's own /tmp and /dev/shm included: a live system that writes files there
moves it, and a spare sampling it every 2 ms received about 100 bit/s (red team 3). The
fork count in /proc/stat, the thread count and last pid in /proc/loadavg, open files in
/proc/sys/fs/file-nr, and the rest move the same way. Each such file is replaced, in every
box, by a copy of what it said once, before any system started, so it carries nothing of
any method (an lxcfs-like view, frozen instead of emulated). sysinfo(2), which returns the
same counters without /proc, is refused by the seccomp filter (seccomp.py).

The rule (procsnap.py applies it to the running kernel's /proc):

- frozen: every regular file directly under /proc (the per-process entries are
  directories and links, and stay live: they show the box's own processes) but a short
  list of static ones (procsnap.KEPT_LIVE: cmdline, version, filesystems, kallsyms, ...,
  which change only when root loads a module or adds hardware); the directories
  /proc/pressure and /proc/sys/fs as a whole (fs/file-nr, inode-nr, inode-state,
  dentry-state, dentry-negative, aio-nr and quota/* are counters among settings a box
  cannot change); kernel/pty/nr, random/entropy_avail and hung_task_detect_count in
  /proc/sys/kernel. cpuinfo is among them ("cpu MHz" moves with load), so is uptime (its
  idle time is the sum of every CPU's idle time: a clean receiver of CPU load);
- emptied: /proc/fs (ext4's free blocks per group, jbd2 and xfs statistics), /proc/irq
  (interrupt counts), /proc/tty/driver (serial line counters) and the physical page
  tables /proc/kpageflags, kpagecount and kpagecgroup (mode 0400, readable to a box whose
  uid maps to root: every page of the host's memory, tens of MB);
- only what exists and what the sandbox user can read: a file a box cannot read needs no
  cover.

What stays live and moves with other processes: the per-network-namespace files that
count host-wide (/proc/self/net/softnet_stat, stat/rt_cache, and sockstat's TCP memory:
a per-process directory no bind can cover), statvfs of bound host paths, and one's own
CPU time (docs/guarantees.md measures these).

The copy is taken once per harness process (`current`), the first time a sandbox or a
container is made, by a child that dropped every capability (it reads what a box reads,
never more), into a directory only the harness writes (`/tmp/apmproc-<pid>-<start>-*`,
removed at exit; one a killed harness left is removed by the next). Each runtime binds it:

- a fresh box (sandbox.py): `--ro-bind COPY PATH` after `--proc /proc`;
- a template start (apmbench/adapters/template.py) mounts its own /proc: it holds each
  covered path of the template's box open before that mount and binds it over the new
  /proc after, read-only (the start request names the paths);
- a container (docker/runtime.py): runc lets a bind land on the files lxcfs emulates only
  (RUNC_BINDABLE): those get the frozen copy; every other covered path is masked (the
  engine's MaskedPaths: an empty file or directory), and so are /sys's host-wide counters
  (`sys_counters`: a container has a /sys, a box has none).
"""

from __future__ import annotations

import atexit
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.errors import ConfigError
from apmbench.harness.json_types import JsonObject
from apmbench.harness.runtimes import owned_dirs, procsnap

BASE = Path("/tmp")
PREFIX = "apmproc-"
SNAPSHOT_TIMEOUT_S = 60.0

RUNC_BINDABLE = frozenset(
    {"cpuinfo", "diskstats", "loadavg", "meminfo", "slabinfo", "stat", "swaps", "uptime"}
)
"""The /proc files runc lets a bind mount land on (those lxcfs emulates); a bind anywhere
else under /proc is refused ("cannot be mounted because it is inside /proc")."""
DOCKER_MASKED = (
    "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
    "/sys/firmware", "/sys/devices/virtual/powercap",
)  # fmt: skip
"""Docker's own masked paths: a container's MaskedPaths replaces them, so they are kept."""
CGROUP_MASKED = ("/sys/fs/cgroup",)
"""A container's own cgroup tree, which Docker shows it unmasked: its memory cgroup's
statistics (workingset refaults, page-cache counts) with the serving cgroup inside, a
channel a red team read across starts. Masked, it is an empty read-only directory."""
SYS_COUNTER_DIRS = (
    "/sys/devices/system/node",
    "/sys/devices/system/cpu/cpufreq",
    "/sys/devices/virtual/bdi",
    "/sys/devices/virtual/block",
    "/sys/fs/btrfs",
    "/sys/fs/ext4",
    "/sys/fs/f2fs",
    "/sys/fs/xfs",
    "/sys/kernel/irq",
    "/sys/kernel/mm",
    "/sys/kernel/slab",
    "/sys/kernel/uevent_seqnum",
    "/sys/module/page_reporting",
)
"""/sys entries with host-wide counters, masked in containers: per-node meminfo and
vmstat, CPU frequency, backing-device limits (they follow free memory), block device and
file-system statistics, interrupt counts, memory management and slab caches, the device
event count, free page reporting to a hypervisor."""
SYS_COUNTER_GLOBS = ("/sys/devices/system/cpu/cpu[0-9]*/cpuidle",
                     "/sys/devices/system/cpu/cpu[0-9]*/cpufreq")  # fmt: skip
"""Per-CPU idle states (time and count per state: the host's CPU load) and frequency."""


def sys_counters(sys_root: Path = Path("/sys")) -> list[str]:
    """The /sys paths a container gets masked on this host: SYS_COUNTER_DIRS and the
    per-CPU entries that exist, and every block device's directory (its `stat` counts the
    host's I/O; /sys/class/block links to where each one lies)."""

    def here(path: str) -> Path:
        return sys_root / Path(path).relative_to("/sys")

    found = [p for p in SYS_COUNTER_DIRS if os.path.lexists(here(p))]
    for pattern in SYS_COUNTER_GLOBS:
        found += [
            "/sys/" + str(Path(p).relative_to(sys_root))
            for p in sorted(glob.glob(str(here(pattern))))
        ]
    block = sys_root / "class" / "block"
    devices = set()
    if block.is_dir():
        for entry in sorted(block.iterdir()):
            real = Path(os.path.realpath(entry))
            if real.is_relative_to(sys_root):
                devices.add("/sys/" + str(real.relative_to(sys_root)))
    # A partition lies in its disk's directory, and loop devices in a masked directory.
    for device in sorted(devices):
        if not any(device.startswith(p.rstrip("/") + "/") for p in [*found, *devices]):
            found.append(device)
    return found


@dataclass(frozen=True)
class ProcView:
    """The frozen copy in `root` and what it covers (paths inside a box, under /proc)."""

    root: Path
    frozen: tuple[str, ...]
    emptied: tuple[str, ...]
    unreadable: tuple[str, ...]
    """Covered by the rule, but this harness's uid cannot read them, nor can a box."""
    sys_masked: tuple[str, ...] = ()

    @staticmethod
    def _in_box(name: str) -> str:
        return f"/proc/{name}"

    def covers(self) -> list[tuple[Path, str]]:
        """(frozen copy or empty directory, path in the box) for every cover, in the order
        they are bound."""
        names = [*self.emptied, *self.frozen]
        return [(self.root / "proc" / n, self._in_box(n)) for n in names]

    def paths(self) -> list[str]:
        """The covered paths in a box, as a template start binds them again."""
        return [path for _, path in self.covers()]

    def bwrap_args(self) -> list[str]:
        """bwrap's arguments, to follow `--proc /proc`."""
        args = []
        for source, path in self.covers():
            args += ["--ro-bind", str(source), path]
        return args

    def docker_binds(self) -> list[tuple[Path, str]]:
        """(frozen copy, path in the container) where runc allows a bind."""
        return [(self.root / "proc" / n, self._in_box(n)) for n in self.frozen
                if n in RUNC_BINDABLE]  # fmt: skip

    def docker_masked(self) -> list[str]:
        """The container's MaskedPaths: Docker's own, every covered path runc cannot bind
        (or this harness cannot read: a container of another user might), /sys's counters."""
        covered = [n for n in (*self.emptied, *self.frozen, *self.unreadable)
                   if n not in RUNC_BINDABLE or n in self.unreadable]  # fmt: skip
        masked = [*DOCKER_MASKED, *(self._in_box(n) for n in covered), *self.sys_masked]
        return list(dict.fromkeys([*masked, *CGROUP_MASKED]))

    def describe(self) -> JsonObject:
        """What the manifest records (runtime.sandbox.proc_view)."""
        return {
            "frozen": [self._in_box(n) for n in self.frozen],
            "emptied": [self._in_box(n) for n in self.emptied],
            "taken": "once per harness process, before it started any system",
            "live": "per-process entries; /proc/kallsyms",
        }


_lock = threading.Lock()
_view: ProcView | None = None


def current() -> ProcView:
    """This harness process's view, taken the first time it is asked for."""
    global _view
    with _lock:
        if _view is None:
            _view = take()
        return _view


def remove_dead_dirs(base: Path = BASE) -> None:
    """Frozen copies left by a harness that was killed (its pid and start time no longer
    run), and owned by this uid."""
    for entry, info in owned_dirs.dead_owner_dirs(base, PREFIX):
        if info.st_uid == os.getuid():
            shutil.rmtree(entry, ignore_errors=True)


def take(base: Path = BASE) -> ProcView:
    """Copy /proc's covered files now, as a box would read them, into a fresh directory
    removed when this process exits."""
    remove_dead_dirs(base)
    root = Path(tempfile.mkdtemp(prefix=owned_dirs.name_prefix(PREFIX), dir=base))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    argv = [sys.executable, "-I", "-S", procsnap.__file__, str(root)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SNAPSHOT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        summary, why = None, str(e)
    else:
        summary, why = _summary(done)
    if summary is None:
        shutil.rmtree(root, ignore_errors=True)
        raise ConfigError(
            f"the frozen copy of /proc that every sandbox and container gets could not be "
            f"taken ({why}); it is written in {base}, which must be writable by this user"
        )
    return ProcView(
        root,
        frozen=tuple(summary["frozen"]),
        emptied=tuple(summary["emptied"]),
        unreadable=tuple(summary["unreadable"]),
        sys_masked=tuple(sys_counters()),
    )


def _summary(done: subprocess.CompletedProcess[str]) -> tuple[dict[str, list[str]] | None, str]:
    """procsnap's summary, or None and why not."""
    lines = done.stderr.strip().splitlines()
    if done.returncode != 0:
        return None, lines[-1] if lines else f"exit code {done.returncode}"
    try:
        summary = json.loads(done.stdout)
    except ValueError:
        return None, "no summary"
    return summary, ""
