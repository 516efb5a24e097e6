"""Host access times behind gVisor's file proxy, as a store (red team 13).

runsc's gofer binds the box's read-only paths with the kernel's default flags, so a read
in the box sets the host file's access time (relatime updates it whenever it is older
than the modification time); a later start reads it back with stat(). `AtimeStore`
ships CELLS files in its own package, each modified in 2100 and accessed in 2000 (so
every read moves the access time), and keeps a 16-bit token per export there: region r's
bit i is a 1 where file r*16+i was read. It exports the region and the token (so that
the next start can *say* whether it read the token back: `atime: MATCH`, `MISS`, or
`UNREAD` where no cell of the region was read), and nothing it read is in the export.
Built by `make_package` into a directory of the test's own.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from apmbench.adapters.sdk import ExportedState

from .quiet import QuietSystem

BITS = 16
REGIONS = 40
CELLS = BITS * REGIONS
PAST = 946_684_800  # 2000-01-01
FUTURE = 4_102_444_800  # 2100-01-01


class AtimeStore(QuietSystem):
    name = "atime-store"

    def __init__(self) -> None:
        self.cells = Path(__file__).with_name("cells")
        self.next_region = 0

    def _cell(self, region: int, bit: int) -> Path:
        return self.cells / str(region * BITS + bit)

    def export_state(self) -> ExportedState:
        region, token = self.next_region, secrets.randbits(BITS) | 1  # never all zeros
        if region < REGIONS:
            for bit in range(BITS):
                if token >> bit & 1:
                    self._cell(region, bit).read_bytes()
            self.next_region += 1
        data = {"region": region, "token": token, "next": self.next_region}
        return ExportedState(json.dumps(data).encode(), "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        data = json.loads(state.data)
        self.next_region = max(self.next_region, int(data["next"]))
        region = int(data["region"])
        if region >= REGIONS:
            return
        got = 0
        for bit in range(BITS):
            got |= int(os.stat(self._cell(region, bit)).st_atime > PAST + 86_400) << bit
        said = "UNREAD" if got == 0 else "MATCH" if got == data["token"] else "MISS"
        print(f"atime: {said}", flush=True)


def make_package(directory: Path) -> str:
    """A package `atstore` in `directory` holding the cheater and its cells; returns the
    `--system` spec."""
    package = directory / "atstore"
    cells = package / "cells"
    cells.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "store.py").write_text(Path(__file__).read_text())
    (package / "quiet.py").write_text(Path(__file__).with_name("quiet.py").read_text())
    for i in range(CELLS):
        cell = cells / str(i)
        cell.write_bytes(b"x")
        os.utime(cell, (PAST, FUTURE))
    return "atstore.store:AtimeStore"
