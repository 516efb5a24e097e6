"""A system that never looks at a frame scores at chance on the synthetic benchmark's decisions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import RuntimeSpec
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

TESTS = Path(__file__).resolve().parents[1]


def test_a_timing_only_decider_stays_at_chance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rule it applies reached 100 % on the first generator (interval lengths,
    # the time since a registration, the order of heartbeats).
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )
    dataset = synthetic_dataset("small", 0, tmp_path / "cache")
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=dataset,
            out=out,
            runtime=RuntimeSpec(system="helpers.timing_cheater:TimingOnlyDecider"),
            persistence=Persistence.RESET,
        )
    )
    decisions = json.loads((out / "report.json").read_text())["decision_accuracy"]
    overall = decisions["overall"]
    assert overall["positive_probes"] + overall["negative_probes"] > 80
    assert abs(overall["BA"] - 50) <= 15, decisions
