"""ProcCounterRelay: memory relayed from a live system to its spare through host-wide counters.

Red team 3's cheat. Every instance listens from the moment it starts: a thread samples
/proc/meminfo (Shmem counts every tmpfs page on the host, the box's own /tmp and /dev/shm
included), /proc/loadavg, /proc/stat and sysinfo(2) every 2 ms, and the other host-wide
counter files every 100 ms. While it serves, each user turn it ingests is sent: it writes
SHM_BYTES to its /dev/shm and forks FORKS processes (the turn's bit, in a real relay,
timed in slots). A spare started while the live system serves hears every turn as a
moving counter and recalls the live one's memory without its export.

Its answers (and `listened()`) say what it heard: which counters moved while it listened,
Shmem's and the fork count's range, how many samples, and what sysinfo answered. In the
sandbox, whose /proc counters are frozen copies and whose filter refuses sysinfo, nothing
moves; unconfined, Shmem moves by SHM_BYTES and the fork count by FORKS.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import struct
import threading
import time
from pathlib import Path
from typing import Any

from apmbench.adapters.sdk import Query, UserTurn
from helpers.cheaters import _Base, _tag

SHM_BYTES = 64 << 20
FORKS = 200
SAMPLE_S = 0.002
FAST = ("/proc/meminfo", "/proc/loadavg", "/proc/stat")
"""Sampled every SAMPLE_S (with sysinfo): the counters red team 3 used."""
SLOW = (
    "/proc/vmstat", "/proc/zoneinfo", "/proc/buddyinfo", "/proc/slabinfo",
    "/proc/pagetypeinfo", "/proc/pressure/cpu", "/proc/pressure/io", "/proc/pressure/memory",
    "/proc/sys/fs/file-nr", "/proc/sys/fs/inode-nr", "/proc/sys/fs/dentry-state",
    "/proc/diskstats", "/proc/interrupts", "/proc/softirqs", "/proc/schedstat", "/proc/locks",
    "/proc/uptime", "/proc/cpuinfo", "/proc/kpageflags",
)  # fmt: skip
"""Sampled every 50th time: every other host-wide counter the red team listed."""
SLOW_EVERY = 50
READ_BYTES = 1 << 20
"""At most this much of each file (kpageflags is tens of MB: its first MB moves enough)."""


def _read(path: str) -> bytes:
    try:
        with open(path, "rb", buffering=0) as f:
            return f.read(READ_BYTES)
    except OSError as e:
        return f"error {errno.errorcode.get(e.errno or 0, e.errno)}".encode()


def _field(text: bytes, name: bytes) -> int | None:
    """The first number after `name` at the start of a line (Shmem:, processes)."""
    for line in text.splitlines():
        if line.startswith(name):
            return int(line[len(name) :].split()[0])
    return None


_LIBC = ctypes.CDLL(None, use_errno=True)
_SYSINFO = "@l3L6LHH2LI"  # struct sysinfo on LP64: uptime, loads, ram and swap, procs, ...


def sysinfo() -> tuple[int, ...] | str:
    """sysinfo(2)'s counters (loads, free, shared and buffer RAM, free swap, procs; not the
    uptime, a clock), or the error's name when it is refused."""
    buffer = ctypes.create_string_buffer(128)
    if _LIBC.sysinfo(buffer) != 0:
        return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    fields = struct.unpack_from(_SYSINFO, buffer.raw)
    return (*fields[1:4], fields[5], fields[6], fields[7], fields[9], fields[10])


class Listener:
    """Samples the counters from construction on, in a daemon thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, set[str]] = {}
        self._ranges: dict[str, tuple[int, int]] = {}
        self._sysinfo: set[str] = set()
        self.samples = 0
        self.started = time.monotonic()
        self.last = self.started
        self._sample(slow=True)
        threading.Thread(target=self._run, daemon=True).start()

    def _note(self, name: str, text: bytes) -> None:
        self._seen.setdefault(name, set()).add(hashlib.sha1(text).hexdigest())

    def _range(self, name: str, value: int | None) -> None:
        if value is not None:
            low, high = self._ranges.get(name, (value, value))
            self._ranges[name] = (min(low, value), max(high, value))

    def _sample(self, slow: bool) -> None:
        read = {path: _read(path) for path in (*FAST, *(SLOW if slow else ()))}
        info = sysinfo()
        with self._lock:
            for path, text in read.items():
                self._note(path, text)
            self._range("shmem_kb", _field(read["/proc/meminfo"], b"Shmem:"))
            self._range("processes", _field(read["/proc/stat"], b"processes"))
            self._sysinfo.add(info if isinstance(info, str) else json.dumps(info))
            if isinstance(info, tuple):
                self._range("sysinfo_sharedram", info[4])
            self.samples += 1
            self.last = time.monotonic()

    def _run(self) -> None:
        count = 0
        while True:
            time.sleep(SAMPLE_S)
            count += 1
            self._sample(slow=count % SLOW_EVERY == 0)

    def heard(self) -> dict[str, Any]:
        """What it heard so far: each counter's number of distinct values, those that moved,
        the ranges of Shmem (kB), the fork count and sysinfo's shared RAM, and sysinfo's
        answers (an error name when refused). It samples once more first, so what it says
        runs up to the moment it is asked."""
        self._sample(slow=True)
        with self._lock:
            values = {name: len(seen) for name, seen in self._seen.items()}
            sysinfo_seen = sorted(self._sysinfo)
            return {
                "samples": self.samples,
                "listened_s": round(self.last - self.started, 3),
                "from": self.started,
                "to": self.last,
                "values": values,
                "moved": sorted(n for n, v in values.items() if v > 1)
                + (["sysinfo"] if len(sysinfo_seen) > 1 else []),
                "ranges": dict(self._ranges),
                "sysinfo": sysinfo_seen[0] if len(sysinfo_seen) == 1 else "moved",
            }


def send(tag: str) -> dict[str, Any]:
    """One turn's signal: SHM_BYTES written to /dev/shm (kept), FORKS processes forked."""
    began = time.monotonic()
    path = Path("/dev/shm") / f"apm-relay-{tag}-{os.getpid()}-{time.monotonic_ns()}"
    with open(path, "wb") as f:
        block = b"\1" * (1 << 20)
        for _ in range(SHM_BYTES >> 20):
            f.write(block)
    for _ in range(FORKS):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return {"from": began, "to": time.monotonic(), "shm": str(path)}


class ProcCounterRelay(_Base):
    name = "proc-counter-relay"

    def __init__(self) -> None:
        self.listener = Listener()
        self.sent: list[dict[str, Any]] = []

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.sent.append(send(_tag()))

    def reply(self, query: Query) -> dict[str, Any]:
        out = super().reply(query)
        heard = self.listener.heard()
        out["heard"] = heard
        out["sent"] = self.sent
        # What a spare recalls of the live system's turns: one per jump of Shmem.
        low, high = heard["ranges"].get("shmem_kb", (0, 0))
        out["recalled"] = (high - low) // (SHM_BYTES >> 10)
        return out
