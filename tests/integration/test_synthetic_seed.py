"""The synthetic oracle: the generator is public, so a system that knows (or can search)
the seed rebuilds every label in its own /tmp. By default `evaluate --synthetic` draws
the seed at random and records it; a run from a seed the user chose says so at the top
of its report, and `--resume` finds the recorded seed by itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

KNOWN = "Synthetic dataset from a known seed"


def evaluate(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--synthetic", "tiny",
         "--system", "null", "--persistence", "reset", "--judge", "none", "--out", str(out),
         *extra],
        capture_output=True, text=True, timeout=600, env=os.environ,
    )  # fmt: skip


def synthetic(out: Path) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads((out / "manifest.json").read_text())["dataset"]
    return recorded


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("APMBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.slow
def test_the_default_seed_is_drawn_recorded_and_found_again_on_resume(
    tmp_path: Path, cache: Path
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        done = evaluate(out)
        assert done.returncode == 0, done.stderr
    a, b = synthetic(first)["synthetic"], synthetic(second)["synthetic"]
    assert a["seed_drawn"] is True and b["seed_drawn"] is True
    assert a["seed"] != b["seed"]  # two draws from 2**63 seeds
    assert f"seed{a['seed']}-" in synthetic(first)["path"]
    assert KNOWN not in (first / "report.md").read_text()
    again = evaluate(first, "--resume")
    assert again.returncode == 0, again.stderr
    assert synthetic(first)["synthetic"] == a


@pytest.mark.slow
def test_a_chosen_seed_is_labelled_in_the_report(tmp_path: Path, cache: Path) -> None:
    out = tmp_path / "run"
    done = evaluate(out, "--seed", "13")
    assert done.returncode == 0, done.stderr
    assert synthetic(out)["synthetic"] == {"preset": "tiny", "seed": 13, "seed_drawn": False}
    assert (
        KNOWN in (out / "report.md").read_text() and "--seed 13" in (out / "report.md").read_text()
    )


def test_resume_without_a_recorded_seed_says_how_to_give_it(tmp_path: Path, cache: Path) -> None:
    done = evaluate(tmp_path / "nothing-here", "--resume")
    assert done.returncode == 2
    assert "--resume of a --synthetic run needs its seed" in done.stderr
