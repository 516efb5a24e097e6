"""The embedded default end to end, as `make demo` runs it: synthetic tiny benchmark,
reference systems as processes, into a new demo directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apmbench.adapters.systems import left_out
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_dataset("tiny", 0, tmp_path_factory.mktemp("cache"))


def test_cache_reuses_a_generated_dataset(tiny: Path) -> None:
    stamp = (tiny / "dataset.json").stat().st_mtime_ns
    assert synthetic_dataset("tiny", 0, tiny.parent.parent) == tiny
    assert (tiny / "dataset.json").stat().st_mtime_ns == stamp
    assert not [p for p in tiny.parent.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_the_demo_compares_the_reference_systems(tiny: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    earlier = runs / "demo-20000101-000000"
    earlier.mkdir(parents=True)
    (earlier / "report.json").write_text("{}")
    (runs / "demo").symlink_to(earlier.name)
    # What `make demo` runs, on the cached tiny benchmark (seed 0) instead of `small`.
    result = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.demo", "--runs", str(runs),
         "--synthetic", "tiny", "--seed", "0"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "APMBENCH_CACHE": str(tiny.parent.parent)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = (runs / "demo").resolve()
    assert re.fullmatch(r"demo-\d{8}-\d{6}", out.name), out
    assert (earlier / "report.json").read_text() == "{}"  # the earlier demo is kept
    assert "Utility, latency and storage" in result.stdout and "frame-archive" in result.stdout
    reports: dict[str, Any] = {
        name: json.loads((out / name / "report.json").read_text())
        for name in ("recent-frames", "frame-archive", "text-log", "text-only")
    }

    def family(name: str, key: str) -> float:
        return float(reports[name]["families"][key]["score"])

    archive, recent = reports["frame-archive"], reports["recent-frames"]
    # Raw video as memory remembers earlier sessions; four recent frames cannot.
    assert family("frame-archive", "cross_session_understanding") > family(
        "recent-frames", "cross_session_understanding"
    )
    # Both see the current scene.
    assert family("recent-frames", "real_time_perception") >= 75
    assert family("frame-archive", "real_time_perception") >= 75
    storage = {n: r["storage"]["storage_per_hour_bytes"] for n, r in reports.items()}
    assert storage["frame-archive"] > 100 * storage["text-log"] > 0
    assert storage["recent-frames"] == 0
    ttft = {n: r["latency"]["time_to_first_token_s"]["mean"] for n, r in reports.items()}
    assert ttft["frame-archive"] > ttft["recent-frames"]
    assert (
        archive["decision_accuracy"]["overall"]["BA"] > recent["decision_accuracy"]["overall"]["BA"]
    )
    manifest = json.loads((out / "text-log" / "manifest.json").read_text())
    assert manifest["system"]["name"] == "text-log"
    assert manifest["settings"]["persistence"] == "restart"
    # The offline demo: the synthetic reference judge scores the adaptive tasks (labelled),
    # every run has its HTML report, and the comparison has one too.
    for name, report in reports.items():
        assert report["scoring"]["judge"]["kind"] == "synthetic_reference", name
        assert report["judge"]["by_status"].get("not_configured", 0) == 0, name
        scored = [
            t for t in ("RCR", "MPA", "PRM", "TPG") if report["tasks"][t]["score"] is not None
        ]
        assert scored, name
        assert (
            "synthetic reference judge, not the paper's LLM judge"
            in (out / name / "report.md").read_text()
        )
        assert (
            "synthetic reference judge, not the paper&#39;s LLM judge"
            in (out / name / "report.html").read_text()
        )
    assert (out / "compare.html").is_file()
    assert "synthetic reference judge, not the paper's LLM judge" in result.stdout
    # Not a terminal: progress comes as log lines, one per finished trajectory and per system.
    assert result.stderr.count("trajectory finished") == 4
    assert result.stderr.count("system finished") == 4
    assert "eta_s=" in result.stderr
    # Every phase says so: the data, each system with its own time, the systems left out.
    assert "synthetic benchmark ready" in result.stderr
    finished = [line for line in result.stderr.splitlines() if "system finished" in line]
    assert all(re.search(r"took_s=\d", line) for line in finished), finished
    not_run = re.findall(r"system not run +system=(\S+) why=", result.stderr)
    assert not_run == list(left_out("apmbench")), not_run
    assert "demo: finished in" in result.stderr and str(out.name) in result.stderr
