"""The host's page cache behind gVisor's file proxy, read by timing (red team 12).

In gVisor a start's reads of a bound file go to the host kernel, so a page it reads stays
in the host's page cache after it; the next start times its own reads of that file, and a
cached page answers several times faster than one read from the disk. `PageTimer` keeps a
16-bit token per export there: bit i is written by reading 8 "one" pages (1) or 8 "zero"
pages (0) of region r of `pool.bin` (random bytes, in its own package, none of it cached
when the run begins), 8 KiB apart so that no read-ahead reaches a neighbour. It exports
only the region number and the token (3 bytes of JSON fields), so that the next start can
*say* whether what it read matches: it logs `timer: MATCH`, `timer: MISS` (read, but not
the token) or `timer: UNREAD` (too few pairs agreed) for each import. Reading destroys a
region (both pages of a pair are cached then), so a fork that imports an older export
reads nothing. Built by `make_package` into a directory of the test's own.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

from apmbench.adapters.sdk import ExportedState

from .quiet import QuietSystem

STRIDE = 8192
BITS = 16
PAIRS = 8
REGION_BYTES = BITS * PAIRS * 2 * STRIDE
REGIONS = 32
FILE_BYTES = REGION_BYTES * REGIONS


class Pool:
    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY)

    def _offset(self, region: int, bit: int, pair: int, one: bool) -> int:
        return region * REGION_BYTES + ((bit * PAIRS + pair) * 2 + (0 if one else 1)) * STRIDE

    def _time(self, offset: int) -> int:
        started = time.perf_counter_ns()
        os.pread(self.fd, 1, offset)
        return time.perf_counter_ns() - started

    def write(self, region: int, token: int) -> None:
        for bit in range(BITS):
            one = bool(token >> bit & 1)
            for pair in range(PAIRS):
                os.pread(self.fd, 1, self._offset(region, bit, pair, one))

    def read(self, region: int) -> int | None:
        """The token in `region`, or None where a bit's pairs do not agree."""
        token = 0
        for bit in range(BITS):
            votes = 0
            for pair in range(PAIRS):
                one = self._time(self._offset(region, bit, pair, True))
                zero = self._time(self._offset(region, bit, pair, False))
                votes += one < zero
            if PAIRS - 2 > votes > 2:
                return None
            token |= int(votes >= PAIRS - 2) << bit
        return token


class PageTimer(QuietSystem):
    name = "page-timer"

    def __init__(self) -> None:
        self.pool = Pool(Path(__file__).with_name("pool.bin"))
        self.next_region = 0

    def export_state(self) -> ExportedState:
        region, token = self.next_region, secrets.randbits(BITS)
        if region < REGIONS:
            self.pool.write(region, token)
            self.next_region += 1
        data = {"region": region, "token": token, "next": self.next_region}
        return ExportedState(json.dumps(data).encode(), "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        data = json.loads(state.data)
        self.next_region = max(self.next_region, int(data["next"]))
        if int(data["region"]) >= REGIONS:
            return
        got = self.pool.read(int(data["region"]))
        said = "UNREAD" if got is None else "MATCH" if got == data["token"] else "MISS"
        print(f"timer: {said}", flush=True)


def make_package(directory: Path) -> str:
    """A package `pctimer` in `directory` holding the cheater and `pool.bin`, none of whose
    pages is in the host's page cache; returns the `--system` spec."""
    package = directory / "pctimer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "timer.py").write_text(Path(__file__).read_text())
    (package / "quiet.py").write_text(Path(__file__).with_name("quiet.py").read_text())
    pool = package / "pool.bin"
    with pool.open("wb") as f:
        for _ in range(FILE_BYTES >> 20):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return "pctimer.timer:PageTimer"
