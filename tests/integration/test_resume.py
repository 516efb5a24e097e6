"""A run killed with SIGKILL and resumed ends with the same report as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.timing import TIMING

pytestmark = pytest.mark.usefixtures("helper_env")


def command(mini: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "apmbench.harness.cli", "evaluate",
        "--dataset", str(mini), "--system", "helpers.systems:SlowIngest",
        "--persistence", "reset", "--out", str(out),
        # The sandboxed system sees only the environment it is given.
        "--env", "APMBENCH_INGEST_DELAY", *extra,
    ]  # fmt: skip


def untimed(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def scores(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("latency", "format_failures_timing")}


@pytest.mark.slow
def test_sigkill_then_resume_gives_the_same_report(
    mini: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APMBENCH_INGEST_DELAY", "0.02")
    whole = tmp_path / "whole"
    subprocess.run(command(mini, whole), check=True, capture_output=True)

    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        command(mini, killed), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    first = killed / "trajectories" / "T01.json"
    deadline = time.monotonic() + 120
    while not first.exists():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the first trajectory never finished"
        time.sleep(0.05)
    time.sleep(0.3)  # well into the second trajectory
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "trajectories" / "T02.json").exists()
    assert not (killed / "report.json").exists()
    kept = first.read_bytes()

    again = subprocess.run(command(mini, killed, "--resume"), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert "resuming" in again.stderr
    assert first.read_bytes() == kept, "a finished trajectory was run again"
    assert not (killed / "work").exists()

    assert untimed(killed / "instances.jsonl") == untimed(whole / "instances.jsonl")
    assert untimed(killed / "sessions.jsonl") == untimed(whole / "sessions.jsonl")
    report_a = json.loads((whole / "report.json").read_text())
    report_b = json.loads((killed / "report.json").read_text())
    assert scores(report_a) == scores(report_b)


@pytest.mark.slow
def test_resume_refuses_different_settings(mini: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(mini),
         "--system", "null", "--persistence", "trust", "--out", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    again = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(mini),
         "--system", "null", "--persistence", "reset", "--out", str(out), "--resume"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert again.returncode == 2
    assert "settings.persistence: 'trust' then, 'reset' now" in again.stderr
    fresh = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(mini),
         "--system", "null", "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert fresh.returncode == 2 and "pass --resume" in fresh.stderr
