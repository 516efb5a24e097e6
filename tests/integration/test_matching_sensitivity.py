"""The matching sensitivity table (docs/PROACTEGOMEM.md) rescoring a real run: with the
default settings and no shift it gives exactly what report.json says, a delay costs
matches, a window narrower than the delay matches nothing, and every setting (W's rule
included) is named in report.md's header."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.proactegomem import metrics, sensitivity
from apmbench.harness.suites.proactegomem.report import start_at
from apmbench.harness.suites.proactegomem.synth import synthetic_dataset
from apmbench.harness.suites.proactegomem.tools import NOTIFICATION

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_sensitivity_table_rescores_the_run_as_its_report_does(tmp_path: Path) -> None:
    run = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=synthetic_dataset("tiny", 0, tmp_path / "cache"),
            out=run,
            runtime=runtime_spec(system="proact-rules"),
            persistence=Persistence.RESET,
            benchmark="proactegomem",
        )
    )
    report = json.loads((run / "report.json").read_text())
    lines = (run / "instances.jsonl").read_text().splitlines()
    rows = [r for r in metrics.rows([json.loads(x) for x in lines]) if r.get("role") == "step"]

    same = sensitivity.figures(rows, metrics.Params())
    iv, nt = report["levels"]["intervention"], report["levels"]["notification"]
    assert (same["iv_start"], same["iv_f1"], same["iv_miou"], same["iv_matched"]) == (
        start_at(iv), iv["f1"], iv["miou"], iv["matched"]
    )  # fmt: skip
    assert (same["nt_f1"], same["nt_matched"]) == (nt["f1"], nt["matched"])
    assert same["iv_matched"] > 0

    late = sensitivity.figures(sensitivity.shifted(rows, 2), metrics.Params())
    assert late["iv_matched"] < same["iv_matched"] and late["iv_start"] == 0.0
    narrow = replace(metrics.Params(), early_s=1.0, late_s=3.0)
    assert sensitivity.figures(sensitivity.shifted(rows, 4), narrow)["iv_matched"] == 0

    header = (run / "report.md").read_text().split("\n## ", 1)[0]
    assert "Matching: min_sim 0.5, alpha 0.5, p 1.5, early_s 2, late_s 5, w side." in header
    assert report["matching"]["w"] == metrics.W_SIDE


def test_w_is_the_side_the_error_falls_on_or_the_wider_one() -> None:
    side, wider = metrics.Params(), metrics.Params(w=metrics.W_WIDER)
    # A start 1.5 s late against one 1 s early: with W the side, the late one costs less
    # (1.5 / 5 < 1 / 2); with W the wider side, the early one does (1 / 5 < 1.5 / 5).
    truth = metrics.Span(10.0, 10.0, "kettle")
    early, late = metrics.Span(9.0, 9.0, "kettle"), metrics.Span(11.5, 11.5, "kettle")

    def picked(params: metrics.Params) -> float:
        pairs = metrics.match([early, late], [truth], lambda t, p: 1.0, NOTIFICATION, params)
        return pairs[0].delta

    assert picked(side) == 1.5
    assert picked(wider) == -1.0
