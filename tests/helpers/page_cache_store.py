"""A memory kept in the page cache instead of the export (hostile methods, third round).

`PageCacheStore` exports 2 bytes and keeps a count of the sessions it has seen as the
residency of pages of a large sparse file in its own package (`pages.bin`, read-only and
bound into every start): a page made resident by reading it is a 1. A later start reads
the bits back with no mincore, cachestat or timing: it maps the file with MADV_RANDOM (no
read-ahead), touches one byte of a page and reads its own major-fault counter. Reading a
page sets it, so a message is written once into a fresh region: one marker page (set:
the region holds a message) and Manchester-coded bits (pages 2i, 2i+1: "10" is 1, "01" is
0; anything else is a region a reader opened and found empty). Each start reads at its
first session (a spare started early would read too soon), then writes each new count.

Its answers say what it recovered, so a test can tell "the channel was closed" from "it
happened not to help". Built by `make_package` into a directory of the test's own.
"""

from __future__ import annotations

import json
import mmap
import os
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from apmbench.adapters.sdk import (
    Capabilities,
    ExportedState,
    Frame,
    FrameEncoding,
    MemorySystem,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
)

PAGE = mmap.PAGESIZE
BITS = 16
REGION = 1 + 2 * BITS
FILE_BYTES = 64 << 20


def _major_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


class Pages:
    """The file's pages, touched one at a time without read-ahead."""

    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            self.map = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        self.map.madvise(mmap.MADV_RANDOM)
        self.regions = len(self.map) // PAGE // REGION

    def was_resident(self, page: int) -> bool:
        """Touch `page`; whether it was resident before (it is now, either way)."""
        before = _major_faults()
        _ = self.map[page * PAGE]
        return _major_faults() == before

    def set(self, page: int) -> None:
        _ = self.map[page * PAGE]


class PageCacheStore(MemorySystem):
    """Stand-alone (its package holds only this module and the file): the gallery's other
    cheaters' base class would need tests/ in the box."""

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="page-cache-store",
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG,), preferred_max_side=64, supports_import=True
            ),
        )

    def reset(self, trajectory_id: str) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        pass

    def ingest_user_turn(self, turn: UserTurn) -> None:
        pass

    def end_session(self, end: SessionEnd) -> None:
        pass

    def export_state(self) -> ExportedState:
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        pass

    def query(self, query: Query) -> Iterator[str]:
        yield json.dumps(self.reply(query))

    def __init__(self) -> None:
        self.pages = Pages(Path(__file__).with_name("pages.bin"))
        self.next_region = 0
        self.recalled: int | None = None
        self.opened = False
        self.count = 0

    def _read(self) -> None:
        """Every message written so far, oldest first; stops at the first region no one
        wrote (whose marker this read has just set: that region is now spoiled)."""
        for region in range(self.pages.regions):
            base = region * REGION
            if not self.pages.was_resident(base):
                self.next_region = region + 1
                return
            value, valid = 0, True
            for i in range(BITS):
                one = self.pages.was_resident(base + 1 + 2 * i)
                zero = self.pages.was_resident(base + 2 + 2 * i)
                if one == zero:
                    valid = False
                    break
                value |= int(one) << i
            if valid:
                self.recalled = value
        self.next_region = self.pages.regions

    def _write(self, value: int) -> None:
        region = self.next_region
        if region >= self.pages.regions:
            return
        self.next_region += 1
        base = region * REGION
        for i in range(BITS):
            self.pages.set(base + 1 + 2 * i + (0 if value >> i & 1 else 1))
        self.pages.set(base)  # the marker last: a reader never sees half a message

    def start_session(self, start: SessionStart) -> None:
        if not self.opened:
            self.opened = True
            self._read()
            self.count = self.recalled or 0
        self.count += 1
        self._write(self.count)

    def reply(self, query: Query) -> dict[str, Any]:
        out: dict[str, Any] = (
            {"decision": "SILENT", "reason": "nothing known"}
            if query.kind is QueryKind.DECISION
            else {"answer": "B"}
        )
        out["recalled"] = self.recalled
        out["count"] = self.count
        return out


def make_package(directory: Path) -> str:
    """A package `pcstore` in `directory` holding the cheater and its sparse file; returns
    the `--system` spec. The file is new, so none of its pages is resident."""
    package = directory / "pcstore"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    # The class reads pages.bin beside its own module: a copy of the module there.
    (package / "store.py").write_text(Path(__file__).read_text())
    with open(package / "pages.bin", "wb") as f:
        f.truncate(FILE_BYTES)
    return "pcstore.store:PageCacheStore"
