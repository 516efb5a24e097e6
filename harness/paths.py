"""Where the harness keeps what it generates across runs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_root() -> Path:
    """$APMBENCH_CACHE, else ~/.cache/apmbench-grpc: synthetic datasets, never seen by systems."""
    configured = os.environ.get("APMBENCH_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "apmbench-grpc"


def cached_dataset(name: str, build: Callable[[Path], object], root: Path | None = None) -> Path:
    """`root/synthetic/name` (root: `cache_root()`), built by `build(dir)` on first use.

    Built in a temporary directory beside it and renamed into place, so a killed build
    never leaves a half-written dataset, and two runs building the same one at once both
    end with a complete copy."""
    base = (root or cache_root()) / "synthetic"
    target = base / name
    if (target / "dataset.json").exists():
        return target
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=base))
    try:
        build(work)
        try:
            work.rename(target)
        except OSError:
            if not (target / "dataset.json").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
