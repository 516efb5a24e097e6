"""Generated synthetic datasets, reused across runs.

A dataset is generated once per (preset, seed, generator version) into the
cache directory (`$APMBENCH_CACHE`, else `~/.cache/apmbench-grpc`), built in
a temporary directory and renamed into place, so an interrupted generation
never leaves a half-written dataset behind.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from apmbench.harness.errors import ConfigError
from apmbench.harness.paths import cache_root
from apmbench.harness.suites.apmbench.synth.live import GENERATOR_VERSION
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.suites.apmbench.synth.writer import build


def synthetic_dataset(preset: str, seed: int, root: Path | None = None) -> Path:
    """The directory of the synthetic dataset (generating it on first use)."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}: use one of {', '.join(PRESETS)}")
    root = root or cache_root()
    target = root / "synthetic" / f"{preset}-seed{seed}-v{GENERATOR_VERSION}"
    if (target / "dataset.json").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    (root / "synthetic").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{preset}-", dir=root / "synthetic"))
    try:
        build(PRESETS[preset], seed, work)
        try:
            work.rename(target)
        except OSError:
            if not (target / "dataset.json").exists():  # not a concurrent winner: a real error
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
