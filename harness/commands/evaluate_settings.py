"""`evaluate`'s command line, checked once. evaluate.py builds it and runs one suite from
it, evaluate_suites.py runs several from it: both read it, neither needs the other's code
for that, so it stands apart from both."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apmbench.harness.commands.limits import Caps
from apmbench.harness.media.frames import FrameSettings
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.run.executor import Persistence
from apmbench.harness.run.live import LiveSettings
from apmbench.harness.runtimes import RuntimeSpec

if TYPE_CHECKING:
    # evaluate.py imports these where it builds them (settings_of); here only the type
    # checker needs them.
    from apmbench.harness.orchestrate.shards import Shard
    from apmbench.harness.run.audits.settings import AuditSettings


@dataclass(frozen=True)
class EvaluateSettings:
    """`evaluate`'s command line, checked once: everything the evaluations are built from."""

    dataset: Path | None
    benchmark: str | None
    synthetic: str | None
    seed: int | None
    runtimes: tuple[RuntimeSpec, ...]
    """The runtime as given; with no system named, one per reference system, in turn."""
    embedded: bool
    """No system named: every reference system runs, and a comparison table follows."""
    persistence: Persistence | None
    out: Path | None
    resume: bool
    frames: FrameSettings
    deadlines: Deadlines
    caps: Caps
    startup_timeout_s: float
    audit: AuditSettings | None
    shard: Shard | None
    ray: tuple[str | None, float] | None
    """(address, GPUs per task) with --backend ray; None: here."""
    judge: dict[str, Any]
    judge_optional: bool
    fork_snapshots: bool = False
    variant: str | None = None
    """`--variant`: one of the suite's conditions instead of its own (None: its own)."""
    live: LiveSettings | None = None
    """`--live`: play each session on the video's clock (None: an offline replay)."""

    @property
    def runtime(self) -> RuntimeSpec:
        """The runtime as given (with no system named, the first reference system's)."""
        return self.runtimes[0]
