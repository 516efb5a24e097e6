"""The socket directory of one container start: fresh, bounded, and verified before use.

It is the only host path a container can write to, so three rules keep it from
carrying anything between containers or reaching outside:

- Fresh: every start gets a new directory, and the old one is removed with its
  container; nothing a container leaves there reaches its successor. The name
  carries the harness's pid and start time (`owned_dirs`), so a directory that
  a killed harness left before its container was labelled with it, or after the
  container was gone, is still found and removed by the next start
  (`remove_dead`).
- Bounded: as root the harness mounts a tmpfs of `SIZE_BYTES` and `INODES` on
  it (the socket needs no data blocks and one inode), so a write past that
  fails with ENOSPC and never touches the host's disk. Without root nothing
  can be mounted; a watch then measures the directory every `WATCH_PERIOD_S`
  and has the container killed (the run fails, saying why) as soon as it holds
  more than `SIZE_BYTES`. That bound is looser by what the container writes in
  one period, which is why running the harness as root is the documented way.
- Verified: the harness opens `sock` relative to the directory it made, without
  following links, checks that it is a socket on that directory's file system,
  and connects through that open file (`/proc/self/fd/N`), never through the
  path again. A symlink planted at `sock` (say, to a host socket the harness
  could reach as root) is refused, and one swapped in later is never followed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from apmbench.harness.errors import RuntimeStartError
from apmbench.harness.json_types import JsonObject
from apmbench.harness.runtimes import owned_dirs

# Short (socket paths are limited to 107 bytes); leftover cleanup removes no other directory.
PREFIX = "/tmp/apmd-"
SOCKET = "sock"
SIZE_BYTES = 64 << 10
INODES = 16
# The tmpfs's name in the mount table, so leftovers are recognisable there too.
FS_NAME = "apmbench-sock"
WATCH_PERIOD_S = 0.1
_POLL_S = 0.01


class SocketRefused(RuntimeStartError):
    """What the container left at the socket path is not a socket the harness will connect to."""


def bounded_by() -> str:
    """'tmpfs' when this harness can mount one (root), else 'watch'."""
    return "tmpfs" if os.getuid() == 0 else "watch"


def record() -> JsonObject:
    """What manifest.json keeps under `runtime.socket_dir`."""
    return {
        "fresh_per_start": True,
        "bound_bytes": SIZE_BYTES,
        "bound_inodes": INODES,
        "bounded_by": bounded_by(),
        "connect": "verified socket inode, never a link",
    }


def _usage(path: Path, limit_entries: int) -> tuple[int, int]:
    """(bytes allocated, entries) under `path`, counting no further than `limit_entries`."""
    used, entries = 0, 0
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            entries += 1
            if entries > limit_entries:
                return used, entries
            with contextlib.suppress(OSError):
                used += os.lstat(os.path.join(root, name)).st_blocks * 512
    return used, entries


def remove_path(path: Path) -> None:
    """Unmount (if the harness mounted a tmpfs there) and delete a socket directory."""
    # By prefix alone, '/tmp/apmd-x/../../home' would pass: no `..`, no link, nothing deeper.
    if (
        not str(path).startswith(PREFIX)
        or ".." in path.parts
        or path.parent != Path(PREFIX).parent
        or path.is_symlink()
        or Path(os.path.realpath(path)) != path
    ):
        return
    if os.path.ismount(path):
        done = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            # Still busy (a process holds it): detach it now, it goes when released.
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)
    shutil.rmtree(path, ignore_errors=True)


def _mounts() -> dict[str, tuple[str, str]]:
    """Mount point -> (source, file system type), the topmost mount where they stack."""
    found = {}
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3:
                found[fields[1]] = (fields[0], fields[2])
    return found


def remove_dead() -> list[Path]:
    """Remove the socket directories of harnesses killed (SIGKILL) before they could, and
    return them: directories named by a harness that no longer runs, that are either the
    harness's own tmpfs (only root mounts one, under `FS_NAME`) or, unmounted, owned by
    this user. Anything else with that name (someone else's mount or directory) stays."""
    mounts = _mounts()
    removed = []
    for entry, info in owned_dirs.dead_owner_dirs(Path(PREFIX).parent, Path(PREFIX).name):
        mounted = mounts.get(str(entry))
        if mounted is not None:
            if mounted != (FS_NAME, "tmpfs"):
                continue
        elif info.st_uid != os.getuid():
            continue
        remove_path(entry)
        removed.append(entry)
    return removed


class SocketDir:
    """One start's directory; `wait_socket` returns the only address the client may use."""

    def __init__(self, path: Path, on_overflow: Callable[[str], None]) -> None:
        self.path = path
        self.bounded_by = bounded_by()
        self.overflow: str | None = None
        self._on_overflow = on_overflow
        self._dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self._dev = os.fstat(self._dir_fd).st_dev
        self._sock_fd: int | None = None
        self._stop = threading.Event()
        self._watch: threading.Thread | None = None
        if self.bounded_by == "watch":
            self._watch = threading.Thread(target=self._watch_size, daemon=True)
            self._watch.start()

    @classmethod
    def create(cls, uid: int, gid: int, on_overflow: Callable[[str], None]) -> SocketDir:
        """A new directory that the container's user `uid:gid` can create its socket in."""
        name = owned_dirs.name_prefix(Path(PREFIX).name)
        path = Path(tempfile.mkdtemp(prefix=name, dir=Path(PREFIX).parent))
        try:
            if os.getuid() == 0:
                options = (
                    f"size={SIZE_BYTES},nr_inodes={INODES},mode=0700,uid={uid},gid={gid},"
                    "nosuid,nodev,noexec"
                )
                done = subprocess.run(
                    ["mount", "-t", "tmpfs", "-o", options, FS_NAME, str(path)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    raise RuntimeStartError(
                        f"could not mount the bounded socket directory {path} "
                        f"(mount -t tmpfs: {done.stderr.strip() or done.returncode}); the harness "
                        "needs `mount` from util-linux and, as root, the right to mount tmpfs"
                    )
            return cls(path, on_overflow)
        except BaseException:
            remove_path(path)
            raise

    def wait_socket(self, timeout_s: float, alive: Callable[[], bool]) -> str:
        """Wait for the container's socket, verify it, and return an address pinned to it.

        Raises `SocketRefused` for anything but a socket on this directory's file
        system, and `TimeoutError`/`ChildProcessError` when none appears in time or
        the container exits first.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fd = os.open(SOCKET, os.O_PATH | os.O_NOFOLLOW, dir_fd=self._dir_fd)
                break
            except FileNotFoundError:
                pass
            if self.overflow is not None:
                raise SocketRefused(self.overflow)
            if not alive():
                raise ChildProcessError(f"exited before it created its socket in {self.path}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"created no socket in {self.path} within {timeout_s:.0f} s")
            time.sleep(_POLL_S)
        found = os.fstat(fd)
        problem = None
        if stat.S_ISLNK(found.st_mode):
            target = os.readlink(SOCKET, dir_fd=self._dir_fd)
            problem = f"is a symbolic link (to {target}), not the socket it must serve on"
        elif not stat.S_ISSOCK(found.st_mode):
            problem = f"is not a socket (mode {stat.filemode(found.st_mode)})"
        elif found.st_dev != self._dev:
            problem = "is not on the socket directory's file system"
        if problem is not None:
            os.close(fd)
            raise SocketRefused(
                f"{self.path / SOCKET} {problem}; the harness connects only to a socket the "
                "container created in the directory it was given, and will not follow links"
            )
        self._sock_fd = fd
        # The open file, not the path: a later rename or link at the path changes nothing.
        return f"unix:/proc/self/fd/{fd}"

    def remove(self) -> None:
        """Stop the watch, drop the open files (they keep a mount busy), unmount, delete."""
        self._stop.set()
        if self._watch is not None:
            self._watch.join()
        for fd in (self._sock_fd, self._dir_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._sock_fd = None
        remove_path(self.path)

    def _watch_size(self) -> None:
        while not self._stop.wait(WATCH_PERIOD_S):
            used, entries = _usage(self.path, INODES)
            if used > SIZE_BYTES or entries > INODES:
                self.overflow = (
                    f"the container wrote {used} bytes in {entries} entries into its socket "
                    f"directory {self.path}, past the {SIZE_BYTES}-byte, {INODES}-entry bound "
                    "(it is for the socket only: write to /tmp); it was killed. As root the "
                    "harness mounts a tmpfs there instead and such writes simply fail"
                )
                self._on_overflow(self.overflow)
                return
