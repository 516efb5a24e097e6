"""The harness, not the suite, states a run's identity and confinement at the top of every
report: for every registered suite, `tiny` with `null`, sandboxed and `--no-sandbox`,
through evaluate, score, compare and view.

Before the pipeline wrote them, only APM-Bench's report.md carried the confinement
lines: EgoProbe's and ProactEgoMem's said nothing of a `--no-sandbox` run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.suites import SUITE_REGISTRY

pytestmark = [pytest.mark.integration]

UNCONFINED = "unconfined: numbers not comparable"


def _cli(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", *args],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _head(markdown: str) -> str:
    return markdown.split("\n## ", 1)[0]


def _check_run(run: Path, confined: bool) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    report = json.loads((run / "report.json").read_text())
    name, digest = manifest["dataset"]["name"], manifest["dataset_hash"]
    judge = manifest["scoring"]["judge"]["kind"]
    head = _head((run / "report.md").read_text())
    assert f"Dataset `{name}` (hash `{digest[:12]}`); persistence `restart`; judge `{judge}`" in (
        head
    )
    assert (UNCONFINED in head) is not confined
    header: dict[str, Any] = report["header"]
    assert header["dataset"] == {"name": name, "hash": digest}
    assert header["persistence"] == "restart"
    assert header["storage_verified"] is True
    assert header["judge"]["kind"] == judge
    assert header["confined"] is confined
    assert any(UNCONFINED in note for note in header["notes"]) is not confined
    html = (run / "report.html").read_text()
    assert (UNCONFINED in html) is not confined
    assert digest[:12] in html


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", SUITE_REGISTRY.names())
def test_every_suite_report_carries_the_harness_head(benchmark: str, tmp_path: Path) -> None:
    runs = {}
    for confined in (True, False):
        run = tmp_path / ("sandboxed" if confined else "unconfined")
        args = ["evaluate", "--benchmark", benchmark, "--synthetic", "tiny", "--seed", "0",
                "--system", "null", "--out", str(run)]  # fmt: skip
        _cli(*args, *([] if confined else ["--no-sandbox"]))
        _check_run(run, confined)
        # `score` rewrites every report from the run directory: the head is written again.
        (run / "report.md").unlink()
        _cli("score", str(run))
        _check_run(run, confined)
        runs[confined] = run

    compared = tmp_path / "compare"
    _cli("compare", str(runs[True]), str(runs[False]), "--out", str(compared))
    data = json.loads((compared / "compare.json").read_text())
    assert sorted(h["confined"] for h in data["headers"].values()) == [False, True]
    head = _head((compared / "compare.md").read_text())
    unconfined_label = next(k for k, h in data["headers"].items() if not h["confined"])
    assert f"- {unconfined_label}: **{UNCONFINED}**" not in head  # bold is dropped in lists
    assert f"- {unconfined_label}: {UNCONFINED}" in head
    # Each note once: the identity line both runs share is not repeated per run.
    assert head.count("; persistence `restart`; judge `") == 1

    view = tmp_path / "view.html"
    _cli("view", str(runs[True]), str(runs[False]), "--no-frames", "--out", str(view))
    html = view.read_text()
    assert f"{unconfined_label}: {UNCONFINED}" in html
    assert html.count("; persistence `restart`; judge `") == 1
