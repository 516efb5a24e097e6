"""The public part of APM-Bench says nothing of which probe is positive (the red team's
polarity attack on `split`).

A depth-3 tree trained on one `small` seed's public probes predicts the other's (and back);
its balanced accuracy must stay at chance, <= 0.60, for every decision task. The same test
on the public part as it was (ERA and RCR kept their labelled windows) finds the leak,
so a leak of that kind cannot come back unnoticed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.polarity import DECISION_TASKS, held_out_balanced_accuracy, rows

from apmbench.harness.cli import main
from apmbench.harness.suites.apmbench import split
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SEEDS = (0, 7)
CHANCE = 0.60


def _public_probes(work: Path) -> dict[int, dict[str, tuple[list[list[float]], list[int]]]]:
    out = {}
    for seed in SEEDS:
        data = synthetic_dataset("small", seed)
        public, private = work / f"public-{seed}", work / f"private-{seed}"
        done = CliRunner().invoke(
            main, ["split", str(data), "--public", str(public), "--private", str(private)]
        )
        assert done.exit_code == 0, done.output
        out[seed] = rows(public, private)
    return out


def _accuracy(work: Path) -> dict[str, float]:
    probes = _public_probes(work)
    a, b = (probes[s] for s in SEEDS)
    assert set(a) == set(b) == set(DECISION_TASKS)
    return {task: held_out_balanced_accuracy(a[task], b[task]) for task in DECISION_TASKS}


def test_no_decision_task_polarity_is_predictable_from_the_public_part(tmp_path: Path) -> None:
    accuracy = _accuracy(tmp_path)
    assert all(v <= CHANCE for v in accuracy.values()), accuracy


def test_the_leak_test_finds_the_windows_the_public_part_used_to_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(split, "WINDOW_TASKS", (*split.WINDOW_TASKS, "ERA", "RCR"))
    monkeypatch.setattr(split, "era_decoys", lambda *args: [])
    accuracy = _accuracy(tmp_path)
    assert accuracy["ERA"] > 0.9 and accuracy["RCR"] > 0.9, accuracy
