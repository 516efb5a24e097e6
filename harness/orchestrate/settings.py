"""One evaluation's settings: the record every stage of `evaluate` reads.

It is built once, where the settings are given (the command line's `settings_of`, a
test), and never rebuilt field by field: a copy differs only where a stage decides
something (`dataclasses.replace`). What the command line cannot know before the resolve
stage has run (the synthetic dataset's path and seed, the suite a dataset names, what
`--judge auto` means for it, the default run directory) is left open here and filled by
`orchestrate/resolve.py`, which returns the same record with those fields set; the
stages after it take only a resolved record. The runner's own `RunSettings` is the one
record derived from it, once, by the start stage (it needs the persistence the started
runtime allows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from apmbench.harness.media.frames import FrameSettings
from apmbench.harness.orchestrate.shards import Shard
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.run.audits.settings import AuditSettings
from apmbench.harness.run.executor import (
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_MAX_WORK_BYTES,
    Persistence,
)
from apmbench.harness.run.live import LiveSettings
from apmbench.harness.run.push_cuts import PushCuts
from apmbench.harness.runtimes import RuntimeSpec
from apmbench.harness.scoring.judge import JudgeConfig

AUTO_JUDGE = "auto"
"""A `JudgeConfig.kind` the resolve stage replaces: the reference judge where the dataset
has one (the suite's own synthetic benchmark, or its private part), else none."""

SEED_LIMIT = 2**63
"""Seeds drawn for --synthetic lie below this: too many to try one by one against a run."""

DEFAULT_PRESET = "small"
"""The synthetic size when neither --dataset nor --synthetic is given."""


@dataclass(frozen=True)
class SyntheticOrigin:
    """Where a synthetic dataset came from, for the manifest and the report."""

    preset: str
    seed: int
    seed_drawn: bool
    """True: drawn at random for this run, so no system could know the labels it implies;
    False: the user's --seed, which a system may have been tuned on."""


@dataclass(frozen=True)
class SyntheticRequest:
    """`--synthetic PRESET [--seed S]` before the resolve stage: the seed None is drawn
    there (or, on --resume, read from the run being continued)."""

    preset: str = DEFAULT_PRESET
    seed: int | None = None


@dataclass(frozen=True)
class EvaluateOptions:
    dataset: Path | None
    """The dataset directory; None: the suite's synthetic benchmark (`generate`)."""
    out: Path | None
    """The run directory; None: runs/<dataset>/<system>, decided by the resolve stage."""
    runtime: RuntimeSpec
    """Which system, and how it runs."""
    benchmark: str | None = None
    """The suite; None: the one the dataset names, else APM-Bench. (The command's
    `--benchmark all` or a comma list is here only until it runs each suite in turn.)"""
    persistence: Persistence | None = None
    """None: `restart` where the runtime can restart the system, else `reset`."""
    resume: bool = False
    frames: FrameSettings = field(default_factory=FrameSettings)
    deadlines: Deadlines = field(default_factory=Deadlines)
    startup_timeout_s: float = 120.0
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    """The LLM judge of the judged tasks; `none` leaves judge-dependent numbers uncomputed;
    kind `auto` (AUTO_JUDGE) is decided by the resolve stage."""
    audit: AuditSettings | None = None
    """Audit a sample of queries and trajectories (`--audit`); None: no audits."""
    shard: Shard | None = None
    """Run only this part's trajectories (`--shard i/N`), unscored until `merge`."""
    max_state_bytes: int | None = DEFAULT_MAX_STATE_BYTES
    """Exported state per snapshot at most (`--max-state-size`); None: no cap."""
    max_work_bytes: int | None = DEFAULT_MAX_WORK_BYTES
    """A trajectory's snapshots on disk at once at most (`--max-work-size`); None: no cap."""
    push: PushCuts = field(default_factory=PushCuts)
    """Where push calls end besides questions (random by default: sizes announce nothing)."""
    synthetic: SyntheticOrigin | None = None
    """The built-in generator's preset and seed, when the dataset is synthetic."""
    variant: str | None = None
    """One of the suite's `variants` to play the dataset in; None: the suite's own."""
    live: LiveSettings | None = None
    """`--live`: play each session on the video's clock; None: an offline replay."""
    resume_forks: bool = False
    """`--fork-snapshots` (not --resume): forks start from mid-session snapshots where the
    system allows (R14); False (the default): replays, whose timing announces no question
    (see RunSettings)."""
    generate: SyntheticRequest | None = None
    """With no dataset: the synthetic benchmark to generate (None: DEFAULT_PRESET, a seed
    drawn). The resolve stage turns it into `dataset` and `synthetic`."""
