"""What the suite builds once and every pytest-xdist worker uses.

A tiny model, a compiled server or a container image costs seconds of CPU to make, and
several test modules (run by different workers) need the same one. `Shared` keeps them
in one directory for the whole session, `/tmp/pytest-of-USER/pytest-N/shared` (the parent
of every worker's base temporary directory), and builds each under a file lock: the first
worker to ask builds it, the others wait and then read the same files. `lock(name)` is
the same lock without a directory, for builds that land elsewhere (the Docker engine's
images).

A build runs in a temporary directory renamed into place when it finished, so a worker
killed mid-build leaves nothing that looks complete.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from filelock import FileLock


class Shared:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._locks: dict[str, FileLock] = {}

    @classmethod
    def of(cls, factory: pytest.TempPathFactory) -> Shared:
        base = factory.getbasetemp()
        # A worker's base is <session>/popen-gwN; the session directory is common to all.
        session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        return cls(session / "shared")

    @contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Held by one worker at a time; reentrant within a worker (one FileLock per name:
        a second lock object on the same file would wait for the first)."""
        lock = self._locks.setdefault(name, FileLock(str(self.root / f".{name}.lock")))
        with lock:
            yield

    def build(self, name: str, make: Callable[[Path], object]) -> Path:
        """`root/name`, made by `make(directory)` unless an earlier call made it."""
        target = self.root / name
        with self.lock(name):
            if not target.exists():
                work = self.root / f".{name}.building"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir()
                make(work)
                work.rename(target)
        return target
