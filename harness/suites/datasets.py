"""What the shared machinery does with any suite's datasets, through its `DatasetFormat`:
generate a preset, load (in a variant), split for blind evaluation, read a private part's
labels. One place for the checks and the messages, so no suite repeats them."""

from __future__ import annotations

from pathlib import Path

from apmbench.harness.errors import ConfigError
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset


def check_preset(suite: OpaqueSuite, preset: str) -> None:
    """Refuse a preset the suite has no generator for, naming those it has."""
    if preset not in suite.synthetic_presets:
        known = ", ".join(suite.synthetic_presets) or "none"
        raise ConfigError(f"{suite.title} has no synthetic preset {preset!r} (presets: {known})")


def check_fps(suite: OpaqueSuite, fps: float) -> None:
    """Refuse a frame rate the suite's plan is not built on (`Suite.required_fps`)."""
    required = suite.required_fps
    if required is not None and fps != required:
        raise ConfigError(
            f"{suite.title} steps once per {1 / required:g} s of video, one frame "
            f"each (its paper's setting): --fps must be {required:g}, got {fps:g}"
        )


def synthetic(suite: OpaqueSuite, preset: str, seed: int) -> Path:
    """The built-in synthetic dataset, generated once into the cache and reused."""
    generate = suite.dataset_format().synthetic
    if generate is None:
        raise ConfigError(f"the {suite.title} suite has no synthetic generator")
    check_preset(suite, preset)
    path: Path = generate(preset, seed)
    return path


def write_synthetic(suite: OpaqueSuite, preset: str, seed: int, out: Path) -> dict[str, int]:
    """Write the synthetic dataset to `out`; returns item counts by kind."""
    write = suite.dataset_format().write_synthetic
    if write is None:
        raise ConfigError(f"the {suite.title} suite has no synthetic generator")
    check_preset(suite, preset)
    counts: dict[str, int] = write(preset, seed, out)
    return counts


def load(suite: OpaqueSuite, root: Path, variant: str | None = None) -> SuiteDataset:
    """Read and validate a dataset with its media, to be played in `variant` (None: the
    suite's own condition); DatasetError names what to fix."""
    form = suite.dataset_format()
    if variant is None:
        loaded: SuiteDataset = form.load(root, True)
        return loaded
    if variant not in suite.variants or form.load_variant is None:
        known = ", ".join(suite.variants) or "none"
        raise ConfigError(f"{suite.title} has no variant {variant!r} (variants: {known})")
    varied: SuiteDataset = form.load_variant(root, variant)
    return varied


def split(suite: OpaqueSuite, root: Path, public: Path, private: Path) -> None:
    """Write what a run needs of `root` to `public` (labels withheld, media kept) and its
    labelled annotations to `private` (`apmbench-grpc split`)."""
    write = suite.dataset_format().split
    if write is None:
        raise ConfigError(
            f"the {suite.title} suite cannot split its datasets yet: evaluate with labels present"
        )
    write(root, public, private)


def load_labels(suite: OpaqueSuite, root: Path) -> SuiteDataset:
    """A private part's labelled dataset, read without its media (`score --labels`)."""
    form = suite.dataset_format()
    if form.split is None:
        raise ConfigError(f"the {suite.title} suite cannot score blind predictions yet")
    labelled: SuiteDataset = form.load(root, False)
    return labelled
