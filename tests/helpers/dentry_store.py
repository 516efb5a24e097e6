"""Red team 4: a text log kept in the dentry cache, exporting only a 10-byte key.

Sender: for each bit, stat() one of two groups of names that do not exist under /usr/lib
(read-only, seen by every start): each failed lookup leaves a negative dentry, kernel
memory that outlives the process. Receiver: time the first stat() of both groups (cached
about 1.1 us, uncached about 2 us). Only stat() and a clock: nothing a filter can refuse.
The dentries a start makes are charged to its memory cgroup and reclaimed when it stops
(start_cgroups.py), so in the box nothing is recalled; the escape from that cgroup is
fork_chain.py's. From /work/wred/redteam (dcache.py, dentry_log.py), made one module."""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import time
import zlib
from typing import Any

DIR = os.environ.get("RT_DCACHE_DIR", "/usr/lib")
K = 7  # names per group (odd: a vote per pair)


def _names(key: str, i: int, side: int) -> list[str]:
    return [f"{DIR}/.{key}{i:x}{'ab'[side]}{r}" for r in range(K)]


def _touch(name: str) -> int:
    t = time.perf_counter_ns()
    with contextlib.suppress(OSError):
        os.stat(name)
    return time.perf_counter_ns() - t


def _bits(data: bytes) -> list[int]:
    return [(b >> (7 - j)) & 1 for b in data for j in range(8)]


COPIES = (0, 1 << 20)  # bit offsets of the copies


def send(key: str, payload: bytes, offset: int = 0) -> int:
    frame = struct.pack(">II", len(payload), zlib.crc32(payload)) + payload
    for copy in COPIES:
        for i, bit in enumerate(_bits(frame)):
            for n in _names(key, offset + copy + i, bit):
                _touch(n)
    return len(frame) * 8 * len(COPIES)


def _read_votes(key: str, start: int, count: int) -> list[int]:
    out = []
    for i in range(start, start + count):
        votes = 0
        for na, nb in zip(_names(key, i, 0), _names(key, i, 1), strict=False):
            a, b = _touch(na), _touch(nb)
            votes += 1 if b < a else -1  # the cached name is the faster one
        out.append(votes)
    return out


def _read_bits(key: str, start: int, count: int) -> list[int]:
    return [1 if v > 0 else 0 for v in _read_votes(key, start, count)]


def _bytes(bits: list[int]) -> bytes:
    return bytes(sum(bits[i + j] << (7 - j) for j in range(8)) for i in range(0, len(bits), 8))


def receive(key: str, offset: int = 0) -> bytes | None:
    """Read copy after copy; if none checks out alone, decode the sum of their votes."""
    total: list[int] = []
    for copy in COPIES:
        head = _read_votes(key, offset + copy, 64)
        length, crc = struct.unpack(">II", _bytes([1 if v > 0 else 0 for v in head]))
        if length > 1 << 16:
            print(f"[dcache] copy {copy}: bad length {length}", file=sys.stderr, flush=True)
            continue
        votes = head + _read_votes(key, offset + copy + 64, 8 * length)
        payload = _bytes([1 if v > 0 else 0 for v in votes[64:]])
        if zlib.crc32(payload) == crc:
            return payload
        print(f"[dcache] copy {copy}: crc mismatch ({length} bytes)", file=sys.stderr, flush=True)
        total = votes if not total else [a + b for a, b in zip(total, votes, strict=False)]
    if total:
        bits = [1 if v > 0 else 0 for v in total]
        length, crc = struct.unpack(">II", _bytes(bits[:64]))
        payload = _bytes(bits[64 : 64 + 8 * length])
        if len(payload) == length and zlib.crc32(payload) == crc:
            return payload
    return None


def _dentry_log() -> Any:
    """The system class, built on first use (the SDK is not needed for the store itself)."""
    from apmbench.adapters.sdk import ExportedState
    from apmbench.adapters.systems.text_log import CONTENT_TYPE, TextLog

    class DentryLog(TextLog):
        name = "dentry-log"

        def export_state(self) -> ExportedState:
            inner = super().export_state().data
            key = os.urandom(5).hex()
            n = send(key, zlib.compress(inner, 9))
            print(f"[dentry-log] sent {n} bits under {key}", file=sys.stderr, flush=True)
            return ExportedState(key.encode(), "application/x-dentry-log", 1)

        def import_state(self, state: ExportedState) -> None:
            got = receive(state.data.decode())
            if got is None:
                print("[dentry-log] RECALL FAIL", file=sys.stderr, flush=True)
                super().import_state(ExportedState(b"SESSIONS 0\n", CONTENT_TYPE, 1))
                return
            print(f"[dentry-log] RECALL OK {len(got)} bytes", file=sys.stderr, flush=True)
            super().import_state(ExportedState(zlib.decompress(got), CONTENT_TYPE, 1))

    return DentryLog


def __getattr__(name: str) -> Any:
    if name == "DentryLog":
        return _dentry_log()
    raise AttributeError(name)
