"""A system that never looks at a frame scores at chance on the synthetic benchmark's decisions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.leaky import LEAKY_TASKS, make_leaky

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.slow
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
            runtime=runtime_spec(system="helpers.timing_cheater:TimingOnlyDecider"),
            persistence=Persistence.RESET,
        )
    )
    decisions = json.loads((out / "report.json").read_text())["decision_accuracy"]
    overall = decisions["overall"]
    assert overall["positive_probes"] + overall["negative_probes"] > 80
    assert abs(overall["BA"] - 50) <= 15, decisions


def _decider_ba(tmp_path: Path, preset: str, leaky: bool) -> dict[str, Any]:
    """The decider's report.json decision accuracy, per task and overall."""
    dataset = synthetic_dataset(preset, 0, tmp_path / "cache")
    if leaky:
        assert make_leaky(dataset) > 0
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=dataset,
            out=out,
            runtime=runtime_spec(system="helpers.timing_cheater:TimingOnlyDecider"),
            persistence=Persistence.RESET,
        )
    )
    accuracy: dict[str, Any] = json.loads((out / "report.json").read_text())["decision_accuracy"]
    return accuracy


@pytest.mark.slow
def test_the_timing_only_decider_reads_a_leaky_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The positive control of the test above: the same cheater, on a copy of the
    # benchmark with the first generator's shortcuts put back (the protection off), must
    # read the labels off the times. At chance here would mean a cheater that cannot
    # cheat, and then the test above would prove nothing.
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )
    accuracy = _decider_ba(tmp_path, "small", leaky=True)
    overall = accuracy["overall"]
    assert overall["positive_probes"] + overall["negative_probes"] > 80
    for task in LEAKY_TASKS:
        assert accuracy[task]["BA"] >= 95, accuracy  # 100 measured on each
    assert overall["BA"] >= 85, accuracy  # 90 measured (ERA, not leaked, at 50)
