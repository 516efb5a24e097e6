"""Finished runs on the mini fixture, for tests that score, judge or compare existing runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec

TESTS = Path(__file__).resolve().parents[1]
SYSTEMS = (("null", "null"), ("intervene", "helpers.judge_systems:AlwaysIntervene"))


def mini_runs(root: Path) -> dict[str, Path]:
    """One run of `null` and one of a system that always intervenes, scored without a judge."""
    out = {}
    with pytest.MonkeyPatch.context() as env:
        # The system subprocesses import helpers.judge_systems.
        env.setenv(
            "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
        )
        for name, system in SYSTEMS:
            evaluate(
                EvaluateOptions(
                    dataset=TESTS / "fixtures" / "mini",
                    out=root / name,
                    runtime=runtime_spec(system=system),
                    persistence=Persistence.RESET,
                )
            )
            out[name] = root / name
    return out
