"""Red team 10's register in the kernel's inode-number counters, as a method author wrote it.

`memfd_create` files take inode numbers from the kernel's internal tmpfs, each CPU in
batches of 1024, so a new memfd's number modulo 1024 is that CPU's place in its batch, which
only such allocations on that CPU move and which outlives every process. `write` makes
memfds on the first CPU until the place is the value; `read` makes one and reads it.

`InodeRegister` is text-log that writes a 10-bit checksum of each state it exports there and,
when it imports a state, reads the register and logs whether it holds that state's checksum
("register: MATCH" or "register: MISS"). A run where imports MATCH kept memory outside the
export; the harness scrambles the counters before every start
(harness/runtimes/inode_counters.py), so a match is a 1-in-1024 accident.
"""

from __future__ import annotations

import os
import sys
import zlib

from apmbench.adapters.sdk import ExportedState
from apmbench.adapters.systems.text_log import TextLog

BATCH = 1024


def _place(cpu: int) -> int:
    os.sched_setaffinity(0, {cpu})
    fd = os.memfd_create("register")
    try:
        return os.fstat(fd).st_ino % BATCH
    finally:
        os.close(fd)


def read() -> int:
    """The first CPU's place, as the last write left it (the read itself takes one)."""
    cpus = os.sched_getaffinity(0)
    try:
        return (_place(min(cpus)) - 1) % BATCH
    finally:
        os.sched_setaffinity(0, cpus)


def write(value: int) -> None:
    cpus = os.sched_getaffinity(0)
    try:
        for _ in range(2 * BATCH):
            if _place(min(cpus)) == value % BATCH:
                return
    finally:
        os.sched_setaffinity(0, cpus)


def checksum(data: bytes) -> int:
    return zlib.crc32(data) % BATCH


class InodeRegister(TextLog):
    def export_state(self) -> ExportedState:
        state = super().export_state()
        write(checksum(state.data))
        return state

    def import_state(self, state: ExportedState) -> None:
        held, want = read(), checksum(state.data)
        print(f"register: {'MATCH' if held == want else 'MISS'}", file=sys.stderr, flush=True)
        super().import_state(state)
