"""`evaluate`'s command line, checked once. evaluate.py builds it and runs one suite from
it, evaluate_suites.py runs several from it: both read it, neither needs the other's code
for that, so it stands apart from both."""

from __future__ import annotations

from dataclasses import dataclass

from apmbench.harness.orchestrate.settings import EvaluateOptions
from apmbench.harness.runtimes import RuntimeSpec


@dataclass(frozen=True)
class EvaluateCommand:
    """What `evaluate`'s command line said, checked once: the evaluation's settings, which
    every stage reads as they are, and what only the command decides (which systems run
    in turn, on which backend, and whether an unreachable judge fails the command)."""

    options: EvaluateOptions
    """The settings of the evaluation (with no system named: of the first candidate
    system's; each of the others differs only in `runtime` and `out`)."""
    runtimes: tuple[RuntimeSpec, ...]
    """The runtime as given; with no system named, one per candidate reference system
    (`run_suite` keeps those that answer the suite)."""
    embedded: bool
    """No system named: every reference system runs, and a comparison table follows."""
    ray: tuple[str | None, float] | None
    """(address, GPUs per task) with --backend ray; None: here."""
    judge_optional: bool

    @property
    def runtime(self) -> RuntimeSpec:
        """The runtime as given (with no system named, the first reference system's)."""
        return self.runtimes[0]
