"""The kernel's inode-number counters, scrambled between starts.

Files with no filesystem of their own take inode numbers from counters the whole host
shares: `memfd_create`, a shared anonymous `mmap` and SysV shared memory from the kernel's
internal tmpfs, pipes and sockets from `get_next_ino`. Each CPU takes numbers from these in
batches of 1024, so the number a new file gets, modulo 1024, is that CPU's place in its
batch. A box can set that place (pin itself to a CPU, make so many memfds) and the next box
can read it back (`fstat().st_ino`, or `/proc/self/maps`): about 10 bits per CPU, which
nothing else on a quiet host moves, outside any export. Red team 10 (2026-12-06) kept 20
bits per restart on the 2-CPU host that way, `--no-spare` included, and bought APM-Bench
Overall 45.33 -> 67.56 at 200 B/hr.

`scramble` advances every CPU's place in both counters by a secret random count below 1024
before each start, so what a box reads is its predecessor's value plus a uniform random
number modulo 1024: nothing of it. It makes a few thousand memfds and pipes per CPU
(milliseconds on the test host).
"""

from __future__ import annotations

import os
import secrets

BATCH = 1024
"""LAST_INO_BATCH and the internal tmpfs's per-CPU batch (fs/inode.c, mm/shmem.c)."""


def _advance(count: int, make: str) -> None:
    for _ in range(count):
        if make == "memfd":
            os.close(os.memfd_create("apmbench-scramble", os.MFD_CLOEXEC))
        else:
            read, write = os.pipe()
            os.close(read)
            os.close(write)


def scramble() -> dict[str, int]:
    """Advance both counters on every CPU this process may run on (a system's box and
    container run on no other) by secret random counts; what was done, for the log."""
    cpus = sorted(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    try:
        for cpu in cpus:
            os.sched_setaffinity(0, {cpu})  # this thread only: the counters are per CPU
            _advance(secrets.randbelow(BATCH), "memfd")
            _advance(secrets.randbelow(BATCH), "pipe")
    finally:
        os.sched_setaffinity(0, before)
    return {"cpus": len(cpus)}
