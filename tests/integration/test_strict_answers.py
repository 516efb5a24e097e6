"""`--strict-answers`: an answer readable only by deterministic repair (here one sentence of
prose around the option, helpers/prose_answers.py) is scored as read by default, as the
APM-Bench paper's appendix B.5 does and the sibling suites follow, and as a format failure
with the switch. The report's first line names the mode, `score` keeps it unless told
otherwise, and `compare` will not put a strict run beside a repaired one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.suites.egoprobe.synth import synthetic_dataset

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.usefixtures("helper_env")]
PROSE = "helpers.prose_answers:ProseFrameArchive"


def _evaluate(dataset: Path, out: Path, *extra: str) -> dict[str, object]:
    done = CliRunner().invoke(
        main,
        ["evaluate", "--dataset", str(dataset), "--system", PROSE, "--persistence", "reset",
         "--out", str(out), *extra],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    report: dict[str, object] = json.loads((out / "report.json").read_text())
    return report


def _single(report: dict[str, object]) -> object:
    return report["single_turn"]["all"]["accuracy"]  # type: ignore[index]


def test_repaired_answers_count_by_default_and_fail_when_strict(tmp_path: Path) -> None:
    dataset = synthetic_dataset("tiny", 0, tmp_path / "cache")
    repaired = _evaluate(dataset, tmp_path / "repaired")
    strict = _evaluate(dataset, tmp_path / "strict", "--strict-answers")
    # frame-archive is right on every question of its own synthetic benchmark.
    assert _single(repaired) == 100.0 and _single(strict) == 0.0
    failures = strict["format_failures"]
    assert failures["total"] == failures["queries"] > 0, failures  # type: ignore[index]
    assert "answers `repaired`." in (tmp_path / "repaired" / "report.md").read_text()
    assert "answers `strict`." in (tmp_path / "strict" / "report.md").read_text()
    assert strict["header"]["answers"] == "strict"  # type: ignore[index]
    rows = [
        json.loads(x) for x in (tmp_path / "strict" / "instances.jsonl").read_text().splitlines()
    ]
    assert rows and all("--strict-answers" in r["format_reason"] for r in rows)

    # `score` keeps the recorded mode, and each switch changes it.
    rescored = CliRunner().invoke(main, ["score", str(tmp_path / "strict")])
    assert rescored.exit_code == 0, rescored.output
    assert _single(json.loads((tmp_path / "strict" / "report.json").read_text())) == 0.0
    back = CliRunner().invoke(main, ["score", str(tmp_path / "strict"), "--repaired-answers"])
    assert back.exit_code == 0, back.output
    assert _single(json.loads((tmp_path / "strict" / "report.json").read_text())) == 100.0
    again = CliRunner().invoke(main, ["score", str(tmp_path / "repaired"), "--strict-answers"])
    assert again.exit_code == 0, again.output

    # Two runs read under different rules are not compared.
    both = CliRunner().invoke(
        main,
        ["compare", str(tmp_path / "repaired"), str(tmp_path / "strict"),
         "--out", str(tmp_path / "cmp")],
    )  # fmt: skip
    assert both.exit_code != 0 and "Traceback" not in both.output, both.output
