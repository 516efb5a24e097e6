"""The gated judge of APM-Bench's free-form tasks (Appendix A.3): which graded rows it is
asked about and how its outcomes are written back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from apmbench.harness.scoring.judge.judging import JudgeOutcome, JudgeRequest
from apmbench.harness.suites.apmbench import metrics, rubric, tasks
from apmbench.harness.suites.apmbench.dataset import Dataset
from apmbench.harness.suites.base import Judging, MutableRow


def requests(dataset: Dataset, instances: Sequence[MutableRow]) -> list[JudgeRequest]:
    """Mark every gated row (the judge's fields start empty) and ask about those whose
    gate passed; a failed gate needs no judge."""
    probes = {p.probe_id: (c, p) for c in dataset.candidates for p in c.probes}
    asked = []
    for row in metrics.rows(instances):
        if tasks.spec(row["task"]).metric is not tasks.Metric.GATED_JUDGE:
            continue
        row["judge_score"] = None
        passed = bool(row["gate_passed"])
        row["judge"] = {"status": metrics.NOT_CONFIGURED if passed else metrics.NOT_NEEDED}
        if passed:
            # Scoring refuses instances not in the dataset before it judges.
            candidate, probe = probes[row["instance_id"]]
            messages = rubric.request_messages(candidate, probe, row)
            asked.append(JudgeRequest(row["instance_id"], messages, rubric.CORRECTION_TEMPLATE))
    return asked


def apply(instances: Sequence[MutableRow], outcomes: Mapping[str, JudgeOutcome]) -> None:
    """Write each outcome and its score into the row it was asked about."""
    for row in metrics.rows(instances):
        outcome = outcomes.get(row["instance_id"])
        if outcome is not None:
            row["judge"] = outcome.as_dict()
            row["judge_score"] = outcome.score


JUDGING: Judging[Dataset] = Judging(requests, apply, rubric.templates_sha256)
