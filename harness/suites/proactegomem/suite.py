"""ProactEgoMem (proactive memory in streaming egocentric video) as a suite.

dataset (the format), tools (the tool state the harness owns), plan (per-second
steps at each proactive level, then memory QA in fresh sessions), metrics
(section 5.1: Hungarian matching, Start@τ, error, P/R/F1, mIoU, QA), report and
synth (the synthetic generator).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import ClassVar

from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.plan import Segment
from apmbench.harness.suites.base import (
    DatasetFormat,
    Grading,
    Headline,
    ReportFormat,
    Suite,
    preset_writer,
)
from apmbench.harness.suites.proactegomem import judging, metrics, report
from apmbench.harness.suites.proactegomem.dataset import Dataset, load_dataset
from apmbench.harness.suites.proactegomem.metrics import Report
from apmbench.harness.suites.proactegomem.plan import QAItem, StepItem, items, plan_clip
from apmbench.harness.suites.proactegomem.synth import PRESETS
from apmbench.harness.suites.proactegomem.tools import PER_STEP, parse_step


def _grade(item: StepItem | QAItem, text: str) -> metrics.ChoiceGrade | metrics.StepGrade:
    if isinstance(item, QAItem):
        q = item.question
        return metrics.grade_qa(q.choices, q.answer, text)
    parsed = parse_step(text, item.level)
    # The step's effect depends on the tool state: metrics.score replays the clip.
    return {
        "format": "ok" if parsed.ok else "unparseable",
        "format_reason": parsed.error,
        "ground_truth": item.ground_truth,
    }


def _headline(report_: Report) -> Headline:
    return Headline.measured(
        report.f1(report_["levels"].get("intervention")),
        "Intervention F1, IC, ST and LT pooled (the project's)",
        report_["latency"],
        report_["storage"],
    )


class ProactEgoMem(Suite[Dataset, StepItem | QAItem, Report]):
    name: ClassVar[str] = "proactegomem"
    title: ClassVar[str] = "ProactEgoMem"
    scoring_schema: ClassVar[int] = metrics.SCHEMA_VERSION

    synthetic_presets: ClassVar[tuple[str, ...]] = tuple(PRESETS)
    # Section 5.2: one step per second, each with the frame of that second.
    required_fps: ClassVar[float | None] = 1.0
    variants: ClassVar[Mapping[str, str]] = {
        PER_STEP: "ProactEgoMem section 5.2's setting: every step its own runtime instance, "
        "given only the prompt, the context and the 10 most recent frames"
    }

    def dataset_format(self) -> DatasetFormat[Dataset]:
        from apmbench.harness.suites.proactegomem.split import split
        from apmbench.harness.suites.proactegomem.synth import build, synthetic_dataset

        return DatasetFormat(
            load_dataset,
            split,
            synthetic_dataset,
            preset_writer(PRESETS, build),
            lambda root, _variant: replace(load_dataset(root, True), per_step=True),
            # A public run plans no Oracle Memory condition (it would show the events).
            planned_blind=lambda labelled: replace(labelled, labels_withheld=True),
        )

    def plan(self, dataset: Dataset, trajectory: Trajectory, can_import: bool) -> list[Segment]:
        return plan_clip(dataset, trajectory)

    def grading(self) -> Grading[Dataset, StepItem | QAItem]:
        return Grading(items, _grade, judging=judging.JUDGING)

    def report_format(self) -> ReportFormat[Report]:
        from apmbench.harness.suites.proactegomem import leaderboard

        return ReportFormat(
            metrics.score,
            _headline,
            report.render_markdown,
            report.summary_tables,
            report.comparison,
            report.render_comparison,
            leaderboard_rows=leaderboard.leaderboard_rows,
        )
