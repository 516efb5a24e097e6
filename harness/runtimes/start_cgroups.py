"""Each start lives in cgroups of its own from its first instruction: memory, freezer, pids.

Three guarantees rest on knowing exactly which processes are a start's:

- **page cache and kernel caches** (page_cache.py): what a start makes resident while it
  serves (file pages, and the dentries and inodes of names it looks up) is charged to its
  memory cgroup and reclaimed when it stops;
- **spares frozen once loaded** (spare_freezer.py): a spare runs nothing while the live
  system serves;
- **a bounded number of tasks** (`PIDS_MAX`, as a container gets): a system cannot take the
  host's pids (red team 4's fork chain left 31,561 zombies and no fork for anyone).

Finding a start's processes by walking its process tree races with a process that forks
and exits faster than the walk (red team 4 escaped that way in 20 of 20 starts). So a
start is *born* in its cgroups: a fresh start's command is run through `sh -c 'echo $$ >
...; exec ...'` (the shell, outside the box, enters the cgroups and becomes bwrap); a
template start waits, after it says "up", until the harness has placed it (it has not
forked yet). Every descendant then inherits the cgroups, and the box cannot leave them (it
sees no cgroup file system and has no capability). Moving a start from its load cgroup to
its serve cgroup happens with the start frozen, so nothing forks meanwhile; a move that
leaves a process behind fails the start instead of going on.

cgroup v1 (a hierarchy per controller) and v2 (one hierarchy) are both handled; where the
harness may not make cgroups (not root, no such controllers), `available()` is False with
the reason, and the runtimes record it in the manifest.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.errors import RuntimeStartError

CGROUP_ROOT = Path("/sys/fs/cgroup")
PIDS_MAX = 4096
"""Tasks a start may have at once (Docker's --pids-limit for a system's container too)."""
FREEZE_WAIT_S = 5.0
_counter = itertools.count(1)


def _own(controller: str) -> tuple[Path, int] | None:
    """This process's cgroup directory for `controller` and the cgroup version, if writable."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            directory = CGROUP_ROOT / controller / path.lstrip("/")
            return (directory, 1) if os.access(directory, os.W_OK) else None
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        for line in lines:
            if line.startswith("0::"):
                directory = CGROUP_ROOT / line[3:].lstrip("/")
                return (directory, 2) if os.access(directory, os.W_OK) else None
    return None


def _members(directory: Path) -> set[int]:
    try:
        return {int(x) for x in (directory / "cgroup.procs").read_text().split()}
    except OSError:
        return set()


def _rmdir(directory: Path) -> None:
    for _ in range(100):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                return
            time.sleep(0.01)


@dataclass
class StartGroup:
    """One start's cgroups. `tasks` holds every process of the start (the freezer's and pids'
    cgroup in v1, the start's own in v2); memory moves from `load` to `serve` once it serves."""

    version: int
    tasks: list[Path]
    """Where the start is born: v1 the freezer and pids cgroups, v2 its one cgroup."""
    load: Path
    serve: Path
    frozen: bool = False

    @property
    def _freezer(self) -> Path:
        return self.tasks[0]

    def entries(self) -> list[Path]:
        """The cgroup.procs files a new start writes its pid to."""
        return [
            d / "cgroup.procs"
            for d in ([*self.tasks, self.load] if self.version == 1 else self.tasks)
        ]

    def enter_argv(self, argv: list[str]) -> list[str]:
        """`argv` run by a shell that first enters the start's cgroups (any failure: the
        shell exits 125 before anything of the start runs)."""
        writes = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(self.entries())))
        script = f'{writes} && shift {len(self.entries())} && exec "$@" || exit 125'
        return ["/bin/sh", "-c", script, "sh", *map(str, self.entries()), *argv]

    def place(self, pid: int) -> None:
        """Put `pid` (a start that has not forked yet, waiting for it) in the cgroups."""
        for entry in self.entries():
            entry.write_text(str(pid))

    def all_pids(self) -> set[int]:
        return set().union(*(_members(d) for d in self.tasks))

    def freeze(self) -> None:
        if self.frozen:
            return
        state, value = ("freezer.state", "FROZEN") if self.version == 1 else ("cgroup.freeze", "1")
        (self._freezer / state).write_text(value)
        self.frozen = True
        deadline = time.monotonic() + FREEZE_WAIT_S
        tries = 0
        while time.monotonic() < deadline:
            if self._is_frozen():
                return
            tries += 1
            if self.version == 1 and tries % 20 == 0:
                # v1 stays FREEZING when a task was busy as the freeze passed it; writing
                # FROZEN again retries those (what runc does, and what a loaded CI needs).
                with contextlib.suppress(OSError):
                    (self._freezer / state).write_text(value)
            time.sleep(0.005)

    def _is_frozen(self) -> bool:
        try:
            if self.version == 1:
                return (self._freezer / "freezer.state").read_text().strip() == "FROZEN"
            return "frozen 1" in (self._freezer / "cgroup.events").read_text()
        except OSError:
            return False

    def thaw(self) -> None:
        if not self.frozen:
            return
        state, value = ("freezer.state", "THAWED") if self.version == 1 else ("cgroup.freeze", "0")
        with contextlib.suppress(OSError):
            (self._freezer / state).write_text(value)
        self.frozen = False

    def serving(self) -> None:
        """Before its first request: the start's memory moves to `serve`, frozen meanwhile so
        that no process is born behind the move. v2 keeps one cgroup (pages read while
        loading are then reclaimed with the rest)."""
        if self.version != 1:
            return
        was_frozen = self.frozen
        self.freeze()
        try:
            for _ in range(20):
                left = _members(self.load)
                if not left:
                    return
                for pid in left:
                    with contextlib.suppress(ProcessLookupError, OSError):
                        (self.serve / "cgroup.procs").write_text(str(pid))
            left = _members(self.load)
            if left:
                raise RuntimeStartError(
                    f"{len(left)} processes of the start could not be moved into its serve "
                    "cgroup: the page-cache reset would miss them, so the start is refused"
                )
        finally:
            if not was_frozen:
                self.thaw()

    def release(self) -> int:
        """After the start stopped: kill every process left in it, reclaim what its serving
        made resident, remove its cgroups. Returns the bytes of page cache reclaimed."""
        self.thaw()
        for _ in range(200):
            left = self.all_pids()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        reclaimed = reclaim(self.serve, self.version)
        for directory in [*self.tasks, self.serve, self.load]:
            _rmdir(directory)
        return reclaimed


def cached_bytes(directory: Path, version: int) -> int:
    try:
        stat = (directory / "memory.stat").read_text().splitlines()
    except OSError:
        return 0
    key = "cache" if version == 1 else "file"
    for line in stat:
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def reclaim(directory: Path, version: int) -> int:
    """Reclaim every page charged to `directory` (file pages, and the dentries and inodes its
    lookups made); its processes dead or frozen. Returns the bytes of page cache it held."""
    cached = cached_bytes(directory, version)
    with contextlib.suppress(OSError):  # v1 answers EBUSY for memory it could not free
        if version == 1:
            (directory / "memory.force_empty").write_text("0")
        else:
            (directory / "memory.reclaim").write_text(str(max(cached, 1 << 20)))
    return cached


class StartCgroups:
    """The cgroups of one runtime's starts, under `apmbench-<pid>-<n>` in each hierarchy."""

    def __init__(self) -> None:
        self.why = ""
        self.version = 0
        self.bases: dict[str, Path] = {}
        name = f"apmbench-{os.getpid()}-{next(_counter)}"
        wanted = ("memory", "freezer", "pids")
        found = {c: _own(c) for c in wanted}
        if any(v is None for v in found.values()):
            missing = ", ".join(c for c, v in found.items() if v is None)
            self.why = (
                f"no writable {missing} cgroup here (the harness must run as root on a host "
                "with the memory, freezer and pids controllers)"
            )
            return
        versions = {v[1] for v in found.values() if v is not None}
        self.version = versions.pop() if len(versions) == 1 else 0
        try:
            if self.version == 1:
                for controller, own in found.items():
                    assert own is not None
                    base = own[0] / name
                    base.mkdir()
                    self.bases[controller] = base
            elif self.version == 2:
                own = found["memory"]
                assert own is not None
                base = own[0] / name
                base.mkdir()
                (base / "cgroup.subtree_control").write_text("+memory +pids")
                self.bases["unified"] = base
            else:
                self.why = "cgroup v1 and v2 controllers mixed on this host"
        except OSError as e:
            self.why = f"cannot make cgroups here: {e.strerror or e}"
            self.close()

    def available(self) -> bool:
        return bool(self.bases) and not self.why

    def for_start(self, number: int) -> StartGroup | None:
        if not self.available():
            return None
        leaf = f"start-{number}"
        if self.version == 1:
            tasks = [self.bases["freezer"] / leaf, self.bases["pids"] / leaf]
            load = self.bases["memory"] / f"{leaf}-load"
            serve = self.bases["memory"] / f"{leaf}-serve"
            for directory in [*tasks, load, serve]:
                directory.mkdir()
            (tasks[1] / "pids.max").write_text(str(PIDS_MAX))
        else:
            tasks = [self.bases["unified"] / leaf]
            tasks[0].mkdir()
            (tasks[0] / "pids.max").write_text(str(PIDS_MAX))
            load = serve = tasks[0]
        return StartGroup(self.version, tasks, load, serve)

    def close(self) -> None:
        """Release every start's cgroups left (processes killed), then the bases."""
        bases, self.bases = self.bases, {}
        for base in bases.values():
            if not base.exists():
                continue
            for child in sorted(base.iterdir()):
                if child.is_dir():
                    with contextlib.suppress(OSError):
                        for pid in _members(child):
                            os.kill(pid, signal.SIGKILL)
        for base in bases.values():
            if not base.exists():
                continue
            for child in sorted(base.iterdir()):
                if child.is_dir():
                    if child.name.endswith("-serve"):
                        reclaim(child, self.version)
                    _rmdir(child)
            _rmdir(base)

    def describe(self) -> dict[str, object]:
        if not self.available():
            return {"reset": False, "why_not": self.why}
        return {
            "reset": True,
            "cgroup": f"v{self.version}",
            "pids_max": PIDS_MAX,
            "rule": "each start is born in cgroups of its own; what it makes resident while it "
            "serves (pages, dentries, inodes) is reclaimed when it stops",
        }
