"""The synthetic benchmark has no shortcut: what crosses the wire without frames predicts no label.

Small classifiers are fitted on the wire-visible values of twelve seeds of the
`small` preset and scored on twelve others: decisions, multiple-choice answers
and Evidence Availability labels all stay near chance. The classifiers
themselves are checked on a planted shortcut, the one the first generator had.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from apmbench.harness.suites.apmbench.dataset import load_dataset
from apmbench.harness.suites.apmbench.synth import shortcuts
from apmbench.harness.suites.apmbench.synth.live import covers_everything, trajectory_world
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.suites.apmbench.synth.writer import build

# Twelve seeds a side. With six, Evidence Availability's table came from 18 worlds, and as a
# world's place names set the question lengths of all its EA pairs, a split's balanced
# accuracy moved by chance alone: generator 5 gave the logistic regression 49.3 % on seeds
# 7-12 and 63.9 % the other way round, generator 6 (same EA code, other random draws)
# 36.6 %; on seeds 1-12 against 13-24 generator 6 gives 52.4 % and 55.1 %.
TRAIN, TEST = tuple(range(1, 13)), tuple(range(13, 25))
Tables = dict[str, tuple[shortcuts.Table, shortcuts.Table]]


def pooled(root: Path, seeds: tuple[int, ...]) -> dict[str, shortcuts.Table]:
    parts: dict[str, list[shortcuts.Table]] = {"decision": [], "mc": [], "ea": []}
    for seed in seeds:
        # Render specs instead of videos: the wire values are the same, without encoding.
        build(replace(PRESETS["small"], stored_video=False), seed, root / str(seed))
        dataset = load_dataset(root / str(seed))
        parts["decision"].append(shortcuts.decision_table(dataset))
        parts["mc"].append(shortcuts.mc_table(dataset))
        parts["ea"].append(shortcuts.ea_table(dataset))
    out = {}
    for name, tables in parts.items():
        offsets = np.cumsum([0] + [len(t.y) for t in tables[:-1]])
        out[name] = shortcuts.Table(
            tables[0].names,
            np.vstack([t.x for t in tables]),
            np.concatenate([t.y for t in tables]),
            np.concatenate([t.group + o for t, o in zip(tables, offsets, strict=True)]),
        )
    return out


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Tables:
    root = tmp_path_factory.mktemp("synth")
    train, test = pooled(root, TRAIN), pooled(root, TEST)
    return {name: (train[name], test[name]) for name in train}


MODELS = [lambda: shortcuts.Tree(3), lambda: shortcuts.Logistic()]


@pytest.mark.parametrize("model", MODELS, ids=["tree", "logistic"])
def test_wire_values_do_not_predict_decisions(tables: Tables, model: object) -> None:
    train, test = tables["decision"]
    assert len(test.y) > 600 and 0.3 < test.y.mean() < 0.7
    fitted = model().fit(train.x, train.y, shortcuts.balanced_weights(train.y))  # type: ignore[operator]
    score = shortcuts.balanced_accuracy(fitted, test)
    assert abs(score - 50) <= 10, f"decision balanced accuracy {score:.1f} from wire values"


@pytest.mark.parametrize("model", MODELS, ids=["tree", "logistic"])
def test_wire_values_do_not_predict_options(tables: Tables, model: object) -> None:
    train, test = tables["mc"]
    fitted = model().fit(train.x, train.y)  # type: ignore[operator]
    score = shortcuts.choice_accuracy(fitted, test)
    assert abs(score - 25) <= 10, f"multiple-choice accuracy {score:.1f} from wire values"


@pytest.mark.parametrize("model", MODELS, ids=["tree", "logistic"])
def test_wire_values_do_not_predict_evidence_availability(tables: Tables, model: object) -> None:
    train, test = tables["ea"]
    assert test.y.mean() == 0.5
    fitted = model().fit(train.x, train.y, shortcuts.balanced_weights(train.y))  # type: ignore[operator]
    score = shortcuts.balanced_accuracy(fitted, test)
    assert abs(score - 50) <= 10, f"EA balanced accuracy {score:.1f} from wire values"


def test_the_classifiers_find_a_planted_shortcut() -> None:
    """The first generator's rule: silence intervals 5 s long, others 3 or 4 s."""
    rng = np.random.default_rng(0)
    n = 400
    y = rng.integers(0, 2, n)
    interval = np.where(y == 1, rng.integers(3, 5, n), 5).astype(float)
    x = np.column_stack([interval, rng.normal(size=n), rng.integers(0, 100, n)])
    table = shortcuts.Table(("interval_s", "noise", "offset"), x, y, np.arange(n))
    for model in (shortcuts.Tree(3), shortcuts.Logistic()):
        fitted = model.fit(x[:200], y[:200], shortcuts.balanced_weights(y[:200]))
        test = shortcuts.Table(table.names, x[200:], y[200:], table.group[200:])
        assert shortcuts.balanced_accuracy(fitted, test) > 95


@pytest.mark.parametrize(("preset", "seeds"), [("tiny", range(12)), ("small", range(4))])
def test_every_preset_covers_every_task_for_every_seed(preset: str, seeds: range) -> None:
    for seed in seeds:
        for trajectory in range(PRESETS[preset].trajectories):
            _, candidates = trajectory_world(preset, seed, trajectory)
            assert covers_everything(candidates), (preset, seed, trajectory)


def test_the_paper_preset_covers_every_task() -> None:
    for trajectory in range(3):
        _, candidates = trajectory_world("paper", 0, trajectory)
        assert covers_everything(candidates), trajectory
