"""Spares frozen once loaded: no code of a spare runs while the live system serves.

A spare is the next start, launched while the live system serves so that a restart need
not wait for a load. Both running at once is a channel: whatever the live system moves
(page-cache residency of shared files, host-wide counters, CPU time) a running spare can
watch, and it would start its own life knowing what the live one never exported. So a
spare runs only while it loads: the harness freezes it (cgroup freezer) as soon as its
socket appears, or when its load has taken `deadline_s` (twice the first start's time to
serve, at least MIN_DEADLINE_S: a spare that lingers in its constructor to listen is
frozen then, and finishes loading after its promotion). It is thawed when promoted,
after the live system stopped and its pages were evicted (page_cache.py).

What is left: a spare's load overlaps the live system's first seconds of serving (at most
`deadline_s`), written in docs/guarantees.md.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

from apmbench.harness.runtimes.page_cache import start_family

CGROUP_ROOT = Path("/sys/fs/cgroup")
MIN_DEADLINE_S = 2.0
_counter = itertools.count(1)


def _own_freezer() -> tuple[Path, int] | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "freezer" in controllers.split(","):
            directory = CGROUP_ROOT / "freezer" / path.lstrip("/")
            return (directory, 1) if os.access(directory, os.W_OK) else None
    for line in lines:
        if line.startswith("0::") and (CGROUP_ROOT / "cgroup.controllers").exists():
            directory = CGROUP_ROOT / line[3:].lstrip("/")
            return (directory, 2) if os.access(directory, os.W_OK) else None
    return None


class SpareFreezer:
    """Freezes and thaws spares by start number; `active` False where the host lets the
    harness make no freezer cgroup (then `why` says why, and spares run as before)."""

    def __init__(self) -> None:
        self.why = ""
        self.base: Path | None = None
        self.version = 0
        self.frozen: set[int] = set()
        own = _own_freezer()
        if own is None:
            self.why = "no writable freezer cgroup (run the harness as root)"
            return
        directory, self.version = own
        base = directory / f"apmbench-spares-{os.getpid()}-{next(_counter)}"
        try:
            base.mkdir()
        except OSError as e:
            self.why = f"cannot make a freezer cgroup under {directory}: {e.strerror}"
            return
        self.base = base

    @property
    def active(self) -> bool:
        return self.base is not None

    def _dir(self, number: int) -> Path:
        assert self.base is not None
        return self.base / f"spare-{number}"

    def freeze(self, number: int, root_pid: int) -> None:
        """Move the spare's process tree in (again until none is left outside) and freeze."""
        if self.base is None or number in self.frozen:
            return
        directory = self._dir(number)
        directory.mkdir(exist_ok=True)
        for _ in range(50):
            family = start_family(root_pid)
            if not family:
                return  # gone, or not a process of this harness: nothing to freeze
            inside = self._members(directory)
            outside = [pid for pid in family if pid not in inside]
            if not outside:
                break
            for pid in outside:
                with contextlib.suppress(OSError):
                    (directory / "cgroup.procs").write_text(str(pid))
        with contextlib.suppress(OSError):
            if self.version == 1:
                (directory / "freezer.state").write_text("FROZEN")
            else:
                (directory / "cgroup.freeze").write_text("1")
            self.frozen.add(number)

    def thaw(self, number: int) -> None:
        if self.base is None or number not in self.frozen:
            return
        self.frozen.discard(number)
        with contextlib.suppress(OSError):
            if self.version == 1:
                (self._dir(number) / "freezer.state").write_text("THAWED")
            else:
                (self._dir(number) / "cgroup.freeze").write_text("0")

    @staticmethod
    def _members(directory: Path) -> set[int]:
        try:
            return {int(x) for x in (directory / "cgroup.procs").read_text().split()}
        except OSError:
            return set()

    def close(self) -> None:
        """Thaw and kill whatever is left in any spare's cgroup, then remove them."""
        base, self.base = self.base, None
        if base is None or not base.exists():
            return
        for child in base.iterdir():
            if not child.is_dir():
                continue
            with contextlib.suppress(OSError):
                (child / ("freezer.state" if self.version == 1 else "cgroup.freeze")).write_text(
                    "THAWED" if self.version == 1 else "0"
                )
            for _ in range(100):
                left = self._members(child)
                if not left:
                    break
                for pid in left:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.01)
            with contextlib.suppress(OSError):
                child.rmdir()
        with contextlib.suppress(OSError):
            base.rmdir()

    def describe(self) -> dict[str, object]:
        return {
            "frozen_once_loaded": self.active,
            **({} if self.active else {"why_not": self.why}),
        }
