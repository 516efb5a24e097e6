"""High-water marks of a run directory, measured from outside the harness that writes it.

Two figures: the most bytes in `RUN/work` at once (snapshots, their `.partial` files,
the frame cache), and the biggest section of `RUN/logs/system.log`.

`Watch` (fanotify, Linux, needs CAP_SYS_ADMIN) cannot miss a breach of the work cap:

- every write to a file on the run directory's mount queues a FAN_MODIFY event, and
  the kernel keeps a reference to the written file with it; reading the event hands
  this process an open descriptor, so the file's size can be read even when it was
  deleted (or renamed) a microsecond after the write. The harness only appends to
  what it writes (a file's size never shrinks while it exists), so the size read is
  at least the size at any earlier write;
- the watcher keeps a descriptor on every file written under the run directory until
  it has seen the file deleted (link count 0) once, and each pass sums every file it
  holds: those found dead in this pass's first check, and those whose first event
  this pass read. Two files that were ever on disk at the same moment are therefore
  in one sum together (the proof: the first pass whose check follows that moment
  still holds both), each at no less than its size then;
- a queue overflow, an event whose descriptor could not be made, or a read error
  means an event may be lost: `exact` turns False, and so does a system.log that
  shrank or was replaced (see below), which callers treat as an unmeasured run.

What it may do instead is overcount: a file deleted and another written within one
pass (an idle pass runs every 5 ms; longer on a loaded machine) are summed together.
That can only raise a false alarm, never hide a breach. Not seen: bytes written
through a shared mapping (no write event), and a file moved out of `RUN/work` before
the pass that first reads its write (counted where it then is).

The log needs no watching: LogSection only appends to system.log (mode "ab"), so a
section never shrinks and the file read once at the end holds every section at its
largest. The watcher checks that premise (the file's inode stays the one it saw
written, and its size never falls below the largest it saw) instead of trusting it.

`PollWatch` is the old poller (every 10 ms); a breach shorter than its period is
usually missed. It is what `watcher()` falls back to where fanotify is not allowed
(a user without CAP_SYS_ADMIN), with `exact` False so that a test can say so (a skip,
which fails under CI=true) rather than pass on an unmeasured cap.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import re
import select
import stat
import struct
import threading
from pathlib import Path
from typing import Protocol

POLL_S = 0.01
IDLE_PASS_S = 0.005

_FAN_CLOEXEC = 0x1
_FAN_NONBLOCK = 0x2
_FAN_UNLIMITED_QUEUE = 0x10
_FAN_REPORT_FD_ERROR = 0x2000  # Linux 6.13: a descriptor that cannot be made is reported
_FAN_MARK_ADD = 0x1
_FAN_MARK_MOUNT = 0x10
_FAN_MODIFY = 0x2
_FAN_CLOSE_WRITE = 0x8
_FAN_Q_OVERFLOW = 0x4000
_AT_FDCWD = -100
_METADATA = struct.Struct("IBBHQii")  # struct fanotify_event_metadata
_METADATA_VERSION = 3
_READ_BYTES = 4096
"""At most ~170 events (and so descriptors) per read: far below any open-file limit, since
a descriptor the kernel cannot make would lose its event."""


class Watcher(Protocol):
    work_peak: int
    section_peak: int
    exact: bool
    problems: list[str]

    def __enter__(self) -> Watcher: ...

    def __exit__(self, *exc: object) -> None: ...


def biggest_section(log: Path) -> int:
    try:
        data = log.read_bytes()
    except OSError:
        return 0
    # A process start's header is "--- start #N: ...", a container's "--- container NAME ...".
    parts = re.split(rb"\n--- (?:start #|container )", data)
    return max((len(part) for part in parts), default=0)


def work_bytes(out: Path) -> int:
    work = 0
    for root, _, files in os.walk(out / "work"):
        for name in files:
            with contextlib.suppress(OSError):
                work += os.lstat(os.path.join(root, name)).st_size
    return work


class PollWatch:
    """Polls a run directory every POLL_S: a breach shorter than that is usually missed."""

    exact = False

    def __init__(self, out: Path, period_s: float = POLL_S) -> None:
        self.out = out
        self.period_s = period_s
        self.work_peak = 0
        self.section_peak = 0
        self.problems: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PollWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._poll()

    def _poll(self) -> None:
        self.work_peak = max(self.work_peak, work_bytes(self.out))
        self.section_peak = max(
            self.section_peak, biggest_section(self.out / "logs" / "system.log")
        )


class Unavailable(OSError):
    """fanotify cannot be used here (not Linux, or no CAP_SYS_ADMIN)."""


def _libc() -> ctypes.CDLL:
    name = ctypes.util.find_library("c")
    if name is None or not hasattr(os, "O_LARGEFILE"):
        raise Unavailable(errno.ENOSYS, "no C library with fanotify")
    libc = ctypes.CDLL(name, use_errno=True)
    libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
    libc.fanotify_mark.argtypes = [
        ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p,
    ]  # fmt: skip
    return libc


def _fanotify(anchor: Path) -> int:
    """A fanotify group that reports every write on `anchor`'s mount, with a descriptor."""
    libc = _libc()
    flags = os.O_RDONLY | os.O_LARGEFILE | os.O_CLOEXEC
    base = _FAN_CLOEXEC | _FAN_NONBLOCK | _FAN_UNLIMITED_QUEUE
    fd = libc.fanotify_init(base | _FAN_REPORT_FD_ERROR, flags)
    if fd < 0 and ctypes.get_errno() == errno.EINVAL:
        fd = libc.fanotify_init(base, flags)
    if fd < 0:
        code = ctypes.get_errno()
        raise Unavailable(code, f"fanotify_init: {os.strerror(code)}")
    mask = _FAN_MODIFY | _FAN_CLOSE_WRITE
    if libc.fanotify_mark(fd, _FAN_MARK_ADD | _FAN_MARK_MOUNT, mask, _AT_FDCWD, bytes(anchor)) < 0:
        code = ctypes.get_errno()
        os.close(fd)
        raise Unavailable(code, f"fanotify_mark {anchor}: {os.strerror(code)}")
    return fd


def _path_of(fd: int) -> str:
    """Where an open file is now ("... (deleted)" once unlinked: the suffix is removed)."""
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""
    return path.removesuffix(" (deleted)")


class _Held:
    __slots__ = ("dead", "fd", "size")

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self.dead = False


class Watch:
    """The run directory's high-water marks from fanotify; see the module's docstring."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.work_peak = 0
        self.section_peak = 0
        self.exact = True
        self.problems: list[str] = []
        root = str(out.resolve())
        self._root = root + os.sep
        self._work = os.path.join(root, "work") + os.sep
        self._log = os.path.join(root, "logs", "system.log")
        self._held: dict[tuple[int, int], _Held] = {}
        self._log_inodes: dict[tuple[int, int], int] = {}
        anchor = out
        while not anchor.exists():
            anchor = anchor.parent
        self._fan = _fanotify(anchor)
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="highwater", daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        os.write(self._wake_w, b"x")
        self._thread.join()
        for held in self._held.values():
            os.close(held.fd)
        self._held.clear()
        for fd in (self._fan, self._wake_r, self._wake_w):
            os.close(fd)
        self.section_peak = biggest_section(Path(self._log))
        self._check_log()

    def _lose(self, why: str) -> None:
        self.exact = False
        if why not in self.problems:
            self.problems.append(why)

    def _run(self) -> None:
        poll = select.poll()
        poll.register(self._fan, select.POLLIN)
        poll.register(self._wake_r, select.POLLIN)
        stopping = False
        while not stopping:
            ready = poll.poll(IDLE_PASS_S * 1000)
            stopping = any(fd == self._wake_r for fd, _ in ready)
            # The writer that stops the watch has already exited: one last pass reads
            # everything it wrote.
            self._pass()

    def _pass(self) -> None:
        # 1. Which held files are gone: they are summed once more, then let go.
        for held in self._held.values():
            try:
                held.dead = os.fstat(held.fd).st_nlink == 0
            except OSError:
                held.dead = True
        # 2. Every event queued so far.
        self._drain()
        # 3. The sum of what is held, at sizes read now (no less than at any earlier write).
        total = 0
        for held in self._held.values():
            with contextlib.suppress(OSError):
                held.size = max(held.size, os.fstat(held.fd).st_size)
            if _path_of(held.fd).startswith(self._work):
                total += held.size
        self.work_peak = max(self.work_peak, total)
        for key in [k for k, h in self._held.items() if h.dead]:
            os.close(self._held.pop(key).fd)

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._fan, _READ_BYTES)
            except BlockingIOError:
                return
            except OSError as e:
                self._lose(f"fanotify read failed: {e} (an event may be lost)")
                if e.errno in (errno.EMFILE, errno.ENFILE):
                    continue
                return
            at = 0
            while at + _METADATA.size <= len(data):
                length, version, _, _, mask, fd, _pid = _METADATA.unpack_from(data, at)
                at += max(length, _METADATA.size)
                if version != _METADATA_VERSION:
                    self._lose(f"fanotify metadata version {version}")
                    continue
                if mask & _FAN_Q_OVERFLOW:
                    self._lose("fanotify queue overflow")
                    continue
                if fd < 0:
                    self._lose(f"a write event without a descriptor ({os.strerror(-fd)})")
                    continue
                self._take(fd)

    def _take(self, fd: int) -> None:
        path = _path_of(fd)
        if not path.startswith(self._root):
            os.close(fd)
            return
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            return
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return
        key = (st.st_dev, st.st_ino)
        if path == self._log:
            self._log_inodes[key] = max(self._log_inodes.get(key, 0), st.st_size)
        held = self._held.get(key)
        if held is None:
            self._held[key] = _Held(fd, st.st_size)
        else:
            held.size = max(held.size, st.st_size)
            held.dead = False  # written again: held (and summed) until seen dead once more
            os.close(fd)

    def _check_log(self) -> None:
        """The log is read once, at the end: sound only if it was appended to and no more."""
        if not self._log_inodes:
            return
        try:
            st = os.stat(self._log)
        except OSError:
            self._lose("system.log was written, then removed: its sections are unmeasured")
            return
        key = (st.st_dev, st.st_ino)
        if set(self._log_inodes) != {key}:
            self._lose("system.log was replaced while running: its sections are unmeasured")
        elif st.st_size < self._log_inodes[key]:
            self._lose("system.log shrank while running: its sections are unmeasured")


def watcher(out: Path) -> Watcher:
    """`Watch` where fanotify is allowed, else `PollWatch` (whose `exact` is False)."""
    try:
        return Watch(out)
    except Unavailable:
        return PollWatch(out)
