"""`evaluate --benchmark egoprobe` end to end on the synthetic tiny benchmark with reference
systems as sandboxed processes, then `compare`: the tables, the plot, and the expected shape
(the frame archive recalls at every range; four recent frames hold nothing of the past)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.suites.egoprobe.synth import synthetic_dataset

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    cache = tmp_path_factory.mktemp("cache")
    tiny = synthetic_dataset("tiny", 0, cache)
    out = tmp_path_factory.mktemp("runs")
    done = {}
    for system in ("frame-archive", "recent-frames"):
        result = CliRunner().invoke(
            main,
            ["evaluate", "--benchmark", "egoprobe", "--dataset", str(tiny), "--system", system,
             "--out", str(out / system)],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "EgoProbe accuracy" in result.output or "Accuracy by recall bucket" in result.output
        done[system] = out / system
    return done


def report(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "report.json").read_text())
    return data


def test_reports_show_the_bucket_and_two_turn_tables(runs: dict[str, Path]) -> None:
    text = (runs["frame-archive"] / "report.md").read_text()
    for heading in ("## Accuracy by recall bucket", "## Two-turn probing",
                    "## Event-linked errors on Echo", "R1 right, R2 wrong"):  # fmt: skip
        assert heading in text
    manifest = json.loads((runs["frame-archive"] / "manifest.json").read_text())
    assert manifest["benchmark"] == "egoprobe"


def test_the_archive_recalls_at_every_range_and_recent_frames_do_not(
    runs: dict[str, Path],
) -> None:
    archive, recent = report(runs["frame-archive"]), report(runs["recent-frames"])
    for bucket, cell in archive["buckets"].items():
        if cell["all"]["n"]:
            assert cell["all"]["accuracy"] == 100.0, bucket
    far = [recent["buckets"][b]["all"] for b in ("Long", "Ultra-long")]
    n = sum(c["n"] for c in far)
    right = sum(c["n"] * c["accuracy"] / 100 for c in far if c["n"])
    assert n >= 4 and right / n < 0.5
    # The reference systems answer R1 from memory: the archive, which saw every put-down,
    # says yes to every dialogue, so its two-turn accuracy is its Echo single-turn accuracy
    # (before they knew R1's form they guessed it: R1 50.0 on tiny). Four recent frames
    # hold no put-down of an earlier segment: R1 is their even guess, and two rounds
    # right is rarer than the archive's.
    d = archive["dialogues"]
    assert d["n"] > 0 and d["r1_accuracy"] == 100.0
    assert d["two_turn_accuracy"] == archive["single_turn"]["echo"]["accuracy"] == 100.0
    r = recent["dialogues"]
    assert r["n"] == d["n"] and r["two_turn_accuracy"] < d["two_turn_accuracy"]


def test_compare_plots_accuracy_by_bucket(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = CliRunner().invoke(
        main, ["compare", str(runs["frame-archive"]), str(runs["recent-frames"]), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = (out / "accuracy_by_bucket.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24])[0] > 400
    md = (out / "compare.md").read_text()
    assert "accuracy_by_bucket.png" in md and "Ultra-long" in md
    rows = json.loads((out / "compare.json").read_text())["runs"]
    assert {r["label"] for r in rows} == {"frame-archive", "recent-frames"}
