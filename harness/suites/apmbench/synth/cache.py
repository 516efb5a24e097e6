"""Generated synthetic datasets, reused across runs.

A dataset is generated once per (preset, seed, generator version, generator code) into the
cache directory (`$APMBENCH_CACHE`, else `~/.cache/apmbench-grpc`) by
`paths.cached_dataset`, which every suite's generator shares.
"""

from __future__ import annotations

from pathlib import Path

from apmbench.harness.errors import ConfigError
from apmbench.harness.paths import cached_dataset
from apmbench.harness.suites.apmbench.synth.live import GENERATOR_VERSION
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.suites.apmbench.synth.writer import build


def synthetic_dataset(preset: str, seed: int, root: Path | None = None) -> Path:
    """The directory of the synthetic dataset (generating it on first use)."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}: use one of {', '.join(PRESETS)}")
    name = f"{preset}-seed{seed}-v{GENERATOR_VERSION}"
    return cached_dataset(
        name,
        lambda work: build(PRESETS[preset], seed, work),
        root,
        code=("harness/suites/apmbench/synth", "harness/suites/apmbench/dataset.py"),
    )
