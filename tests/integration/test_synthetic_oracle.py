"""Issue 30's synthetic oracle, both halves: a system that regenerates the benchmark with
the harness's own generator and answers from its labels.

- Unconfined, on a known seed (0 was the default): every multiple-choice answer right.
- Sandboxed: the harness package is not in the box, so there is nothing to regenerate
  with (the same known seed: the masking alone stops it).
- Unconfined but on a drawn seed: the seed search (4 seeds here; a drawn seed is one of
  2^63) finds nothing (the drawn seed alone stops it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.sandbox import find_bwrap
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)
DRAWN = 5_871_324_093_117_402_611  # stands for a seed drawn from 2^63


def _mcqa(tmp_path: Path, seed: int, sandbox: bool) -> list[dict[str, Any]]:
    dataset = synthetic_dataset("tiny", seed, tmp_path / "cache")
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=dataset,
            out=out,
            runtime=runtime_spec(system="helpers.cheaters:SyntheticOracle", sandbox=sandbox),
            persistence=Persistence.RESET,
        )
    )
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    mcqa = [r for r in rows if "correct" in r]
    for row in mcqa:
        row["said"] = json.loads(row["raw_output"])
    assert len(mcqa) >= 8
    return mcqa


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
def test_unconfined_on_a_known_seed_the_oracle_answers_everything(tmp_path: Path) -> None:
    mcqa = _mcqa(tmp_path, 0, sandbox=False)
    assert {r["said"]["oracle"] for r in mcqa} == {"tiny seed 0"}
    assert all(r["correct"] for r in mcqa)  # the cheat works: the protection is what stops it


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
def test_sandboxed_the_oracle_has_no_generator(tmp_path: Path) -> None:
    mcqa = _mcqa(tmp_path, 0, sandbox=True)
    assert all(r["said"]["oracle"].startswith("no generator") for r in mcqa)
    assert sum(r["correct"] for r in mcqa) == sum(r["correct_option_id"] == "B" for r in mcqa)


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
def test_on_a_drawn_seed_the_oracle_finds_no_seed(tmp_path: Path) -> None:
    mcqa = _mcqa(tmp_path, DRAWN, sandbox=False)
    assert all(r["said"]["oracle"].startswith("no seed") for r in mcqa)
    assert sum(r["correct"] for r in mcqa) == sum(r["correct_option_id"] == "B" for r in mcqa)
