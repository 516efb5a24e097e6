"""A --resume of a --synthetic run with another --seed is refused in the user's words: the
seed the run was made with and the one asked for, not the hash of the other dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.errors import RunDirError
from apmbench.harness.run.records import RunDir


def _manifest(seed: int, drawn: bool, dataset_hash: str) -> dict[str, object]:
    return {
        "benchmark": "apmbench",
        "dataset_hash": dataset_hash,
        "dataset": {"synthetic": {"seed": seed, "seed_drawn": drawn}},
    }


@pytest.mark.parametrize(
    ("drawn", "made"), [(False, "--seed 3"), (True, "seed 3 (drawn at random)")]
)
def test_the_run_directory_names_both_seeds(tmp_path: Path, drawn: bool, made: str) -> None:
    run = RunDir(tmp_path / "run")
    run.prepare(_manifest(3, drawn, "a" * 64), resume=False)
    with pytest.raises(RunDirError) as refused:
        run.prepare(_manifest(4, False, "b" * 64), resume=True)
    said = str(refused.value)
    assert f"the run was made with {made}; you asked --seed 4" in said
    assert "b" * 12 not in said  # no dataset hash to decode
    run.prepare(_manifest(3, False, "a" * 64), resume=True)  # the same seed resumes


@pytest.mark.integration
@pytest.mark.slow
def test_evaluate_refuses_another_seed_before_making_its_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("APMBENCH_CACHE", str(cache))
    out = tmp_path / "run"
    first = CliRunner().invoke(
        main,
        ["evaluate", "--synthetic", "tiny", "--seed", "0", "--system", "null", "--out", str(out)],
    )
    assert first.exit_code == 0, first.output
    assert json.loads((out / "manifest.json").read_text())["dataset"]["synthetic"]["seed"] == 0
    again = CliRunner().invoke(
        main,
        ["evaluate", "--synthetic", "tiny", "--seed", "1", "--system", "null",
         "--out", str(out), "--resume"],
    )  # fmt: skip
    assert again.exit_code == 2, again.output
    assert "the run was made with --seed 0; you asked --seed 1" in again.output
    made = sorted(p.name.split("-v")[0] for p in (cache / "synthetic").glob("tiny-*"))
    assert made == ["tiny-seed0"]  # refused before seed 1's dataset was generated
