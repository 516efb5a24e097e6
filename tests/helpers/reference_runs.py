"""Real runs of four quick reference systems on every built-in suite's `tiny` dataset, plus
one unconfined run: what the leaderboard's end-to-end test shows. Made once per test
session (`reference_runs` in tests/conftest.py), by the command line a user would type."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITES = ("apmbench", "egoprobe", "proactegomem")
SYSTEMS = ("null", "recent-frames", "text-log", "frame-archive")
UNCONFINED = ("egoprobe", "null")
"""One run with --no-sandbox, which every report (and the leaderboard) marks unconfined."""


def run_name(benchmark: str, system: str, confined: bool = True) -> str:
    return f"{benchmark}-{system}" + ("" if confined else "-unconfined")


def evaluate(benchmark: str, system: str, out: Path, confined: bool = True) -> None:
    # A known seed, so that every run of a suite is on the same dataset (one ranking).
    args = ["evaluate", "--benchmark", benchmark, "--synthetic", "tiny", "--seed", "0",
            "--system", system, "--out", str(out), *([] if confined else ["--no-sandbox"])]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", *args],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, f"{' '.join(args)}: {done.stderr[-3000:]}"


def make_reference_runs(root: Path) -> None:
    for benchmark in SUITES:
        for system in SYSTEMS:
            evaluate(benchmark, system, root / run_name(benchmark, system))
    benchmark, system = UNCONFINED
    evaluate(benchmark, system, root / run_name(benchmark, system, False), confined=False)
