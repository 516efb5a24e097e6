"""The scores of a run stay what they were: report.json (timings aside) equals the recorded one.

The recorded reports in tests/fixtures/reports were made before the harness
was reorganised around suites; a refactor that changes a number fails here.
A deliberate change of the data or the metrics re-records them (see
tests/fixtures/reports/README.md) in the same commit, saying why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
# Everything in report.json that does not depend on wall-clock time.
SCORE_KEYS = (
    "schema_version",
    "tasks",
    "families",
    "overall",
    "evidence_availability",
    "decision_accuracy",
    "gate_pass_rate",
    "response_quality",
    "judge",
    "format_failures",
    "storage",
)


def scores(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in SCORE_KEYS}


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["mini", "tiny"])
@pytest.mark.parametrize("system", ["null", "frame-archive", "text-only"])
def test_scores_equal_the_recorded_report(
    dataset: str, system: str, mini: Path, tmp_path: Path
) -> None:
    root = mini if dataset == "mini" else synthetic_dataset("tiny", 0)
    result = evaluate(
        EvaluateOptions(dataset=root, out=tmp_path / "run", runtime=runtime_spec(system=system))
    )
    recorded = json.loads((RECORDED / f"{dataset}-{system}.json").read_text())
    assert json.loads(json.dumps(scores(result.report))) == recorded
