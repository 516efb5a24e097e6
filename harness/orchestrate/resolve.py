"""The resolve stage: what the settings leave open, decided once, before anything starts.

- the dataset: the one given, or the suite's synthetic benchmark generated (and cached)
  from a seed: the user's, the one a resumed run recorded, or one drawn here that no
  system could have guessed;
- the suite: `--benchmark`, else the one the dataset names, else the default;
- the variant, checked against the suite's;
- `--judge auto`: the suite's reference judge where the dataset has one, else none;
- the run directory: `runs/<dataset>/<system>` when none was given.

A resolved record resolves to itself, so every later caller (a Ray task, one of the
systems of the embedded comparison) may pass it through again. Errors are ConfigError or
DatasetError saying what to change; the command maps them to its exit codes.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from apmbench.harness import logs
from apmbench.harness.errors import ConfigError, DatasetError, RunDirError
from apmbench.harness.orchestrate.blind import known_seed
from apmbench.harness.orchestrate.settings import (
    AUTO_JUDGE,
    SEED_LIMIT,
    EvaluateOptions,
    SyntheticOrigin,
    SyntheticRequest,
)
from apmbench.harness.orchestrate.shards import recorded_manifests
from apmbench.harness.run.manifest import load as load_manifest
from apmbench.harness.run.records import another_seed
from apmbench.harness.runtimes import RuntimeSpec
from apmbench.harness.suites import DEFAULT, base, datasets, get_suite, suite_of_dataset
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset

Preparing = Callable[[str], AbstractContextManager[object]]
"""What to show while a synthetic benchmark is generated (the command's status line)."""


@dataclass(frozen=True)
class Resolved:
    """The resolve stage's result: settings with nothing left open, the suite and the
    loaded dataset."""

    options: EvaluateOptions
    suite: OpaqueSuite
    dataset: SuiteDataset

    @property
    def out(self) -> Path:
        assert self.options.out is not None  # resolve() sets it
        return self.options.out


def resolve(opts: EvaluateOptions, preparing: Preparing | None = None) -> Resolved:
    """`opts` with the dataset, suite, variant, judge and run directory decided."""
    if opts.dataset is None:
        request = opts.generate or SyntheticRequest()
        suite = get_suite(opts.benchmark or DEFAULT)
        _check(suite, opts)  # before minutes of generating
        datasets.check_preset(suite, request.preset)
        seed, drawn = _seed(request.seed, opts.resume, opts.out)
        root = _generate(suite, request.preset, seed, preparing or _quiet)
        origin: SyntheticOrigin | None = SyntheticOrigin(request.preset, seed, drawn)
    else:
        root = opts.dataset
        suite = suite_of_dataset(root, opts.benchmark)
        _check(suite, opts)
        origin = opts.synthetic or given_seed(root)
    dataset = datasets.load(suite, root, opts.variant)
    judge = opts.judge
    if judge.kind == AUTO_JUDGE:
        judge = replace(judge, kind=auto_judge(suite, root))
    out = opts.out or default_out(root, opts.runtime)
    options = replace(
        opts,
        dataset=root,
        benchmark=suite.name,
        synthetic=origin,
        judge=judge,
        out=out,
        generate=None,
    )
    return Resolved(options, suite, dataset)


def runs_of(dataset: Path) -> Path:
    """Where a dataset's runs go when no --out is given: runs/<dataset>/."""
    return Path("runs") / dataset.name


def default_out(dataset: Path, runtime: RuntimeSpec) -> Path:
    """The run directory when none is given: runs/<dataset>/<system>."""
    return runs_of(dataset) / runtime.label


def given_seed(dataset: Path) -> SyntheticOrigin | None:
    """A dataset `synth --seed N` wrote, evaluated with its labels: its report says the seed
    is known, as a `--synthetic --seed N` run's does (anyone can rebuild its labels). A
    dataset `synth` made from a drawn seed does not hold it, so nothing is said."""
    known = known_seed(dataset).get("synthetic")
    if not isinstance(known, dict):
        return None
    return SyntheticOrigin(str(known.get("preset") or "?"), int(known["seed"]), False)


def auto_judge(suite: OpaqueSuite, dataset: Path) -> str:
    """What `--judge auto` means on `dataset`: "synthetic" where the suite has a reference
    judge for it (its own synthetic benchmark, or the private part of one), else "none"."""
    try:
        base.reference_judge(suite, dataset).close()
    except (ConfigError, DatasetError):
        return "none"
    return "synthetic"


def _check(suite: OpaqueSuite, opts: EvaluateOptions) -> None:
    """What the settings ask of the suite that it may not offer."""
    if opts.variant is not None and opts.variant not in suite.variants:
        known = ", ".join(suite.variants) or "none"
        raise ConfigError(
            f"--variant: {suite.title} has no variant {opts.variant!r} (its variants: {known})"
        )
    datasets.check_fps(suite, opts.frames.fps)


def _quiet(_: str) -> AbstractContextManager[object]:
    return nullcontext()


def _seed(seed: int | None, resume: bool, out: Path | None) -> tuple[int, bool]:
    """The synthetic dataset's seed, and whether it was drawn here: the user's, else on
    --resume the one the run recorded, else a fresh one nobody could have guessed."""
    if seed is not None:
        if resume and out is not None:  # refused before the other seed's dataset is made
            with contextlib.suppress(OSError, RunDirError):
                refused = another_seed(out, load_manifest(out / "manifest.json").synthetic, seed)
                if refused is not None:
                    raise ConfigError(refused)
        return seed, False
    if not resume:
        return secrets.randbelow(SEED_LIMIT), True
    for manifest in recorded_manifests(out) if out else ():
        with contextlib.suppress(OSError, RunDirError):
            recorded = load_manifest(manifest).synthetic
            if recorded is not None:
                return recorded.seed, recorded.seed_drawn
    raise ConfigError(
        "--resume of a --synthetic run needs its seed: give --out of that run (its "
        "manifest.json records the seed), or --seed S (its dataset directory is named "
        "PRESET-seedS-...)"
    )


def _generate(suite: OpaqueSuite, preset: str, seed: int, preparing: Preparing) -> Path:
    began = time.monotonic()
    with preparing(f"preparing the synthetic {preset} benchmark (seed {seed})"):
        root = datasets.synthetic(suite, preset, seed)
    logs.get("evaluate").info(
        "synthetic benchmark ready",
        benchmark=suite.name,
        preset=preset,
        took_s=round(time.monotonic() - began, 1),
    )
    return root
