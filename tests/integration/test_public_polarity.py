"""The public part of APM-Bench says nothing of which probe is positive (the red team's
polarity attack on `split`).

A depth-3 tree trained on the public probes of `small` seeds 0-2 predicts those of seeds 7-9
(and back); its balanced accuracy must stay near chance for every decision task. The same
test on the public part as it was (ERA and RCR kept their labelled windows) finds the leak,
so a leak of that kind cannot come back unnoticed.

One seed a side (24 probes a task) was too noisy: generator 5 passed at 0.60 on seeds 0 and 7
while generator 6 read ERA 0.663 there. Pooled (72 probes a task, 144 for ERA), generator 6
reads ERA 0.647, MPA 0.611, TPG 0.553, PRM 0.521, RCR 0.449. ERA stays above chance (the
tree reads how many public heartbeats a candidate has: one positive among few), stated
open in docs/blind-evaluation.md and docs/guarantees.md and held at `ERA_OPEN` so that it
cannot grow unseen.
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
SIDES = ((0, 1, 2), (7, 8, 9))
CHANCE = 0.62
ERA_OPEN = 0.68


def _public_probes(work: Path, seed: int) -> dict[str, tuple[list[list[float]], list[int]]]:
    data = synthetic_dataset("small", seed)
    public, private = work / f"public-{seed}", work / f"private-{seed}"
    done = CliRunner().invoke(
        main, ["split", str(data), "--public", str(public), "--private", str(private)]
    )
    assert done.exit_code == 0, done.output
    return rows(public, private)


def _pooled(work: Path, seeds: tuple[int, ...]) -> dict[str, tuple[list[list[float]], list[int]]]:
    out: dict[str, tuple[list[list[float]], list[int]]] = {}
    for seed in seeds:
        for task, (features, labels) in _public_probes(work, seed).items():
            x, y = out.setdefault(task, ([], []))
            x += features
            y += labels
    return out


def _accuracy(work: Path) -> dict[str, float]:
    a, b = (_pooled(work, side) for side in SIDES)
    assert set(a) == set(b) == set(DECISION_TASKS)
    return {task: held_out_balanced_accuracy(a[task], b[task]) for task in DECISION_TASKS}


def test_no_decision_task_polarity_is_predictable_from_the_public_part(tmp_path: Path) -> None:
    accuracy = _accuracy(tmp_path)
    assert accuracy["ERA"] <= ERA_OPEN, accuracy
    assert all(v <= CHANCE for task, v in accuracy.items() if task != "ERA"), accuracy


def test_the_leak_test_finds_the_windows_the_public_part_used_to_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(split, "WINDOW_TASKS", (*split.WINDOW_TASKS, "ERA", "RCR"))
    monkeypatch.setattr(split, "era_decoys", lambda *args: [])
    accuracy = _accuracy(tmp_path)
    assert accuracy["ERA"] > 0.9 and accuracy["RCR"] > 0.9, accuracy
