"""`evaluate` on the paper's own annotation examples, as printed (issue 11, item 7).

tests/fixtures/appendix holds the D.3-D.8 records of APM-Bench (arXiv
2609.37559) verbatim, in the release layout, with short real H.264 session
videos. A real system process answers every probe; the run must finish and
report every task the examples contain.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main

APPENDIX = Path(__file__).resolve().parents[1] / "fixtures" / "appendix"


@pytest.mark.slow
@pytest.mark.integration
def test_evaluate_runs_the_appendix_examples_and_reports_every_task(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main, ["evaluate", "--dataset", str(APPENDIX), "--system", "null", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    # D.3 is an ER record (one query); D.4-D.8 have one positive and one negative probe each.
    expected = {"ER": 1, "ERA": 2, "RCR": 2, "MPA": 2, "PRM": 2, "TPG": 2}
    assert {t: report["tasks"][t]["instances"] for t in expected} == expected
    assert all(report["tasks"][t]["candidates"] == 1 for t in expected)
    # null answers A; D.3's correct option is B.
    assert report["tasks"]["ER"]["score"] == 0.0
    # Each adaptive probe is its own runtime instance (section 3.3).
    rows = [json.loads(x) for x in (out / "instances.jsonl").read_text().splitlines()]
    assert len(rows) == 11
    md = (out / "report.md").read_text()
    assert "| ER | 0 | 0.00 |" in md and "| TPG | 0 | 0.00 |" in md
