"""A live system hands its memory to the spare loading beside it through page-cache residency
(hostile methods: a known, open channel, documented by tests/integration/test_spare_relay.py).

`PageCacheRelay` is text-log that exports one byte (its session index) and relays instead a
message of what it has seen (the chain's start count, session count, user-turn count, a
checksum) as the residency of pages of a large sparse file in its own package: a page made
resident is a 1. It needs none of the calls the seccomp filter refuses (mincore, cachestat,
RWF_NOWAIT reads) and no timing:

- the writer (the live start) makes a page resident by touching it through a mapping with
  MADV_RANDOM, so no read-ahead sets its neighbours;
- the reader (a spare, in its constructor) maps the file, touches only the first page of
  each 16-page (64 KiB, the kernel's default fault_around_bytes) group, and reads
  /proc/self/pagemap: fault-around maps the group's pages that are already cached, and the
  "present" bit (63) of its own page table entries is readable unprivileged (only the PFNs
  are zeroed). The first page of each group is the reader's probe (resident once read, so
  it carries nothing); the other 15 carry the message, and the reader never brings them in.

The harness reclaims what a start brought in while serving when it stops, so each live
start writes on a clean file; a spare that listens while the live start serves (from its
constructor, until it is frozen at `spare_deadline_s`) hears it. A message is one slot: a
marker page (set last: a reader never sees half a message) and Manchester-coded bits (pages
2i, 2i+1: "10" is 1, "01" is 0; anything else is no message). The live start writes a new
slot at each session start and user turn; the reader keeps the latest valid one.

Its answers say what it recovered ("recalled", None when nothing), so a test can tell "the
channel was closed" from "it happened not to help". `make_package` builds it with its file
into a directory of the test's own (read-only in the box). `main` measures the channel's
bandwidth between two boxes:

    PYTHONPATH=tests .venv/bin/python -m helpers.page_cache_relay --bits 4096
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import random
import struct
import sys
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from apmbench.adapters.sdk import (
    ExportedState,
    InvalidArgument,
    Query,
    SessionStart,
    UserTurn,
)
from apmbench.adapters.systems.text_log import TextLog

PAGE = mmap.PAGESIZE
GROUP = 16
"""Pages per fault-around window: fault_around_bytes is 64 KiB unless debugfs changed it."""
FILE_BYTES = 64 << 20
FIELDS = "<BBHH"
"""start count, session count, user-turn count, check (crc32 of the first three, low half)"""
BITS = 8 * struct.calcsize(FIELDS)
SLOT = 1 + 2 * BITS
SLOTS = 48
LISTEN_S = float(os.environ.get("APMBENCH_RELAY_LISTEN_S", "3.0"))
"""How long the constructor listens: a spare is frozen at twice the first start's load (at
least 2 s), and the first start's load includes this wait, so a spare hears it whole."""
POLL_S = 0.05
CONTENT_TYPE = "application/x-page-cache-relay"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_MAP_FAILED = ctypes.c_void_p(-1).value
_MAP_FIXED = 0x10
_PROT_NONE = 0  # mmap.PROT_NONE is new in Python 3.13


def data_page(i: int) -> int:
    """The file page of the message's i-th page: every group's first page is a probe."""
    return i // (GROUP - 1) * GROUP + 1 + i % (GROUP - 1)


class Residency:
    """A read-only file whose pages' residency is written by touching and read by
    fault-around and pagemap: no mincore, cachestat, RWF_NOWAIT or timing."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        self.pages = os.fstat(self.fd).st_size // PAGE
        self.pagemap = os.open("/proc/self/pagemap", os.O_RDONLY)

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.pagemap)

    def _map(self, first: int, count: int) -> int:
        """Map file pages [first, first + count) (first a multiple of GROUP) at an address
        aligned to a group, so each fault-around window is exactly one group; no read-ahead."""
        size, align = count * PAGE, GROUP * PAGE
        hole = _libc.mmap(
            None, size + align, _PROT_NONE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0
        )
        if hole in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mmap")
        base = (hole + align - 1) // align * align
        got = _libc.mmap(
            base, size, mmap.PROT_READ, mmap.MAP_SHARED | _MAP_FIXED, self.fd, first * PAGE
        )
        if got != base:
            _libc.munmap(hole, size + align)
            raise OSError(ctypes.get_errno(), "mmap of the file")
        # Trim the reservation around the mapping.
        if base > hole:
            _libc.munmap(hole, base - hole)
        if hole + size + align > base + size:
            _libc.munmap(base + size, hole + size + align - base - size)
        if _libc.madvise(base, size, mmap.MADV_RANDOM) != 0:
            raise OSError(ctypes.get_errno(), "madvise")
        return int(base)

    def set(self, pages: Iterable[int]) -> None:
        """Make each page resident (a 1), in the order given."""
        wanted = list(pages)
        if not wanted:
            return
        first = min(wanted) // GROUP * GROUP
        count = max(wanted) + 1 - first
        base = self._map(first, count)
        try:
            for page in wanted:
                ctypes.c_char.from_address(base + (page - first) * PAGE).value  # noqa: B018
        finally:
            _libc.munmap(base, count * PAGE)

    def read(self, first_group: int, groups: int) -> list[bool]:
        """Residency of every page of the groups, the probes included (each is resident
        now): one touch per group, then the present bits of this process's own mapping."""
        first, count = first_group * GROUP, groups * GROUP
        count = min(count, self.pages - first)
        base = self._map(first, count)
        try:
            for page in range(0, count, GROUP):
                ctypes.c_char.from_address(base + page * PAGE).value  # noqa: B018
            raw = os.pread(self.pagemap, 8 * count, base // PAGE * 8)
        finally:
            _libc.munmap(base, count * PAGE)
        return [bool(v >> 63) for v in struct.unpack(f"<{count}Q", raw)]


def slot_pages(slot: int) -> tuple[int, list[tuple[int, int]]]:
    """A slot's marker page and its bits' (one, zero) page pairs, as file pages."""
    at = slot * SLOT
    return data_page(at), [
        (data_page(at + 1 + 2 * i), data_page(at + 2 + 2 * i)) for i in range(BITS)
    ]


def encode(start: int, sessions: int, turns: int) -> int:
    head = struct.pack("<BBH", start & 0xFF, sessions & 0xFF, turns & 0xFFFF)
    return int.from_bytes(head + struct.pack("<H", zlib.crc32(head) & 0xFFFF), "little")


def decode(value: int) -> dict[str, int] | None:
    raw = value.to_bytes(BITS // 8, "little")
    start, sessions, turns, check = struct.unpack(FIELDS, raw)
    if zlib.crc32(raw[:4]) & 0xFFFF != check:
        return None
    return {"start": start, "sessions": sessions, "turns": turns}


class Channel:
    """Slots of messages on a Residency."""

    def __init__(self, path: Path) -> None:
        self.res = Residency(path)
        last = data_page(SLOTS * SLOT - 1)
        self.groups = last // GROUP + 1
        self.next_slot: int | None = None

    def scan(self) -> tuple[int, int | None]:
        """(slots marked, the latest valid message's value). Reads stop at the first
        unmarked slot: a writer fills slots in order and sets each marker last."""
        bits = self.res.read(0, self.groups)
        latest: int | None = None
        for slot in range(SLOTS):
            marker, pairs = slot_pages(slot)
            if not bits[marker]:
                return slot, latest
            value, valid = 0, True
            for i, (one, zero) in enumerate(pairs):
                if bits[one] == bits[zero]:
                    valid = False
                    break
                value |= int(bits[one]) << i
            if valid:
                latest = value
        return SLOTS, latest

    def write(self, value: int) -> bool:
        """Write `value` into the next free slot; False when none is left."""
        if self.next_slot is None:
            # Unconfined or without the harness's reset, earlier starts' slots stay set.
            self.next_slot, _ = self.scan()
        if self.next_slot >= SLOTS:
            return False
        marker, pairs = slot_pages(self.next_slot)
        self.next_slot += 1
        self.res.set([one if value >> i & 1 else zero for i, (one, zero) in enumerate(pairs)])
        self.res.set([marker])
        return True


def listen(channel: Channel, seconds: float) -> tuple[int | None, int]:
    """Poll for `seconds` (wall time: a spare frozen meanwhile ends at once when thawed);
    the latest valid message heard and the number of polls."""
    end = time.monotonic() + seconds
    latest: int | None = None
    polls = 0
    while True:
        _, value = channel.scan()
        polls += 1
        if value is not None:
            latest = value
        if time.monotonic() >= end:
            return latest, polls
        time.sleep(POLL_S)


class PageCacheRelay(TextLog):
    """text-log's answers from what it sees in its own start, exporting one byte; its chain
    of counts goes from start to start through the page cache."""

    name = "page-cache-relay"

    def __init__(self) -> None:
        super().__init__()
        self.channel = Channel(Path(__file__).with_name("pages.bin"))
        began = time.monotonic()
        heard, self.polls = listen(self.channel, LISTEN_S)
        self.listened_s = round(time.monotonic() - began, 3)
        self.recalled = decode(heard) if heard is not None else None
        known = self.recalled or {"start": 0, "sessions": 0, "turns": 0}
        self.start_count = known["start"] + 1
        self.sessions_seen = known["sessions"]
        self.turns_seen = known["turns"]
        self.written = 0

    def _relay(self) -> None:
        if self.channel.write(encode(self.start_count, self.sessions_seen, self.turns_seen)):
            self.written += 1

    def start_session(self, start: SessionStart) -> None:
        super().start_session(start)
        self.sessions_seen += 1
        self._relay()

    def ingest_user_turn(self, turn: UserTurn) -> None:
        super().ingest_user_turn(turn)
        self.turns_seen += 1
        self._relay()

    def export_state(self) -> ExportedState:
        return ExportedState(bytes([self.session_index + 1 & 0xFF]), CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        if state.content_type != CONTENT_TYPE or len(state.data) != 1:
            raise InvalidArgument(f"page-cache-relay imports one byte of {CONTENT_TYPE}")
        self.session_index = state.data[0] - 1
        self.log, self.current, self.turns = [], [], []

    def query(self, query: Query) -> Iterator[str]:
        text = "".join(super().query(query))
        try:
            body = json.loads(text)
        except ValueError:
            yield text
            return
        if isinstance(body, dict):
            body["recalled"] = self.recalled
            body["relay"] = {
                "start": self.start_count,
                "sessions": self.sessions_seen,
                "turns": self.turns_seen,
                "slots_written": self.written,
                "listened_s": self.listened_s,
                "polls": self.polls,
            }
        yield json.dumps(body)


def make_package(directory: Path, size: int = FILE_BYTES) -> str:
    """A package `pcrelay` in `directory` holding the relay and its sparse file of `size`
    bytes; returns the `--system` spec. The file is new, so none of its pages is resident."""
    package = directory / "pcrelay"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    # The class reads pages.bin beside its own module: a copy of the module there.
    (package / "relay.py").write_text(Path(__file__).read_text())
    with open(package / "pages.bin", "wb") as f:
        f.truncate(size)
    return "pcrelay.relay:PageCacheRelay"


WRITER = r"""
import json, sys, time
from pcrelay.relay import Residency, data_page
path, bits = sys.argv[1], bin(int(sys.argv[2], 16))[3:]
res = Residency(path)
began = time.perf_counter()
res.set(data_page(i) for i, b in enumerate(bits) if b == "1")
print(json.dumps({"seconds": time.perf_counter() - began}))
"""

READER = r"""
import json, sys, time
from pcrelay.relay import GROUP, Residency, data_page
path, n = sys.argv[1], int(sys.argv[2])
res = Residency(path)
groups = data_page(n - 1) // GROUP + 1
reads = []
for _ in range(2):  # twice: reading does not change what it reads
    began = time.perf_counter()
    got = res.read(0, groups)
    seconds = time.perf_counter() - began
    reads.append(("".join("1" if got[data_page(i)] else "0" for i in range(n)), seconds))
# The calls the filter refuses, to show that this box has it: mincore on a page.
import ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
m = mmap.mmap(-1, mmap.PAGESIZE)
vec = ctypes.create_string_buffer(1)
address = ctypes.addressof(ctypes.c_char.from_buffer(m))
refused = libc.syscall(27 if "x86" in __import__("platform").machine() else 232,
                       ctypes.c_void_p(address), ctypes.c_size_t(mmap.PAGESIZE), vec) != 0
print(json.dumps({"bits": [r[0] for r in reads], "seconds": [r[1] for r in reads],
                  "mincore": __import__("os").strerror(ctypes.get_errno()) if refused else "allowed"}))
"""


def measure(bits: int, seed: int = 0) -> dict[str, Any]:
    """Write `bits` random bits (one page each) from one hardened box and read them from
    another; each box's own time for its part, the errors of each read."""
    from apmbench.harness.runtimes.sandbox import Sandbox, python_policy

    rng = random.Random(seed)
    sent = "".join(rng.choice("01") for _ in range(bits))
    with tempfile.TemporaryDirectory(prefix="pcrelay-") as folder:
        spec = make_package(Path(folder), (data_page(bits - 1) // GROUP + 1) * GROUP * PAGE)
        path = str(Path(folder) / "pcrelay" / "pages.bin")
        box = Sandbox(python_policy(spec, [], {}, environ={"PYTHONPATH": folder}))
        wrote = box.run([sys.executable, "-c", WRITER, path, hex(int("1" + sent, 2))], timeout=120)
        if wrote.returncode != 0:
            raise RuntimeError(f"the writer failed: {wrote.stderr}")
        read = box.run([sys.executable, "-c", READER, path, str(bits)], timeout=120)
        if read.returncode != 0:
            raise RuntimeError(f"the reader failed: {read.stderr}")
    w = json.loads(wrote.stdout)
    r = json.loads(read.stdout)
    errors = [sum(a != b for a, b in zip(sent, got, strict=True)) for got in r["bits"]]
    return {
        "bits": bits,
        "ones": sent.count("1"),
        "write_s": round(w["seconds"], 4),
        "write_bits_per_s": round(bits / w["seconds"]),
        "read_s": [round(s, 4) for s in r["seconds"]],
        "read_bits_per_s": round(bits / min(r["seconds"])),
        "errors": errors,
        "bit_error_rate": round(max(errors) / bits, 5),
        "mincore_in_the_reader_box": r["mincore"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bits", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.bits, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
