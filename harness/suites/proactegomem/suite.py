"""ProactEgoMem (proactive memory in streaming egocentric video) as a suite.

dataset (the format), tools (the tool state the harness owns), plan (per-second
steps at each proactive level, then memory QA in fresh sessions), metrics
(section 5.1: Hungarian matching, Start@τ, error, P/R/F1, mIoU, QA), report and
synth (the synthetic generator).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import ClassVar

from rich.table import Table

from apmbench.harness.json_types import JSON
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.reports.scores import ScoreRow
from apmbench.harness.run.plan import Segment
from apmbench.harness.run.records import SessionRecord
from apmbench.harness.scoring.judge.judging import JudgeOutcome, JudgeRequest
from apmbench.harness.suites.base import (
    ComparedRun,
    DatasetFormat,
    Headline,
    MutableRow,
    Row,
    ScoringRecord,
    Suite,
    preset_writer,
)
from apmbench.harness.suites.proactegomem import judging, metrics, prompts, report
from apmbench.harness.suites.proactegomem.dataset import Dataset, load_dataset
from apmbench.harness.suites.proactegomem.metrics import Report
from apmbench.harness.suites.proactegomem.plan import QAItem, StepItem, items, plan_clip
from apmbench.harness.suites.proactegomem.synth import PRESETS
from apmbench.harness.suites.proactegomem.tools import PER_STEP, parse_step


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

    def planned_blind(self, labelled: Dataset) -> Dataset:
        # A public run plans no Oracle Memory condition (it would show the events).
        return replace(labelled, labels_withheld=True)

    def dataset_format(self) -> DatasetFormat[Dataset]:
        from apmbench.harness.suites.proactegomem.split import split
        from apmbench.harness.suites.proactegomem.synth import build, synthetic_dataset

        return DatasetFormat(
            load_dataset,
            split,
            synthetic_dataset,
            preset_writer(PRESETS, build),
            lambda root, _variant: replace(load_dataset(root, True), per_step=True),
        )

    def plan(self, dataset: Dataset, trajectory: Trajectory, can_import: bool) -> list[Segment]:
        return plan_clip(dataset, trajectory)

    def grade(self, item: StepItem | QAItem, text: str) -> metrics.ChoiceGrade | metrics.StepGrade:
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

    def items(self, dataset: Dataset) -> dict[str, StepItem | QAItem]:
        return items(dataset)

    def judge_requests(
        self, dataset: Dataset, instances: Sequence[MutableRow]
    ) -> list[JudgeRequest]:
        return judging.requests(instances)

    def apply_verdicts(
        self, instances: Sequence[MutableRow], outcomes: Mapping[str, JudgeOutcome]
    ) -> None:
        judging.apply(instances, outcomes)

    def judge_templates_sha256(self) -> str | None:
        text = "\n".join(
            (prompts.JUDGE_TEMPLATE, prompts.JUDGE_INTERVENTION, prompts.JUDGE_NOTIFICATION,
             *prompts.NOTIFICATION_REFERENCES.values(), judging.CORRECTION,
             prompts.JUDGE_CLOSING, *prompts.CLOSING_REFERENCES.values())
        )  # fmt: skip
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def score(
        self, instances: Sequence[Row], sessions: Sequence[SessionRecord], scoring: ScoringRecord
    ) -> Report:
        return metrics.score(instances, sessions, scoring)

    def headline(self, report_: Report) -> Headline:
        return Headline.measured(
            report.f1(report_["levels"].get("intervention")),
            "Intervention F1, IC, ST and LT pooled (the project's)",
            report_["latency"],
            report_["storage"],
        )

    def render(self, report_: Report, manifest: Mapping[str, JSON]) -> str:
        return report.render_markdown(report_, manifest)

    def summary_tables(self, reports: Sequence[Report], names: Sequence[str]) -> list[Table]:
        return report.summary_tables(reports, names)

    def leaderboard_rows(self, report_: Report, manifest: Mapping[str, JSON]) -> list[ScoreRow]:
        from apmbench.harness.suites.proactegomem import leaderboard

        return leaderboard.leaderboard_rows(report_, manifest)

    def comparison(self, runs: Sequence[ComparedRun[Report]]) -> report.Comparison:
        return report.comparison(runs)

    def render_comparison(
        self, runs: Sequence[ComparedRun[Report]], data: Mapping[str, object], plot: str | None
    ) -> str:
        return report.render_comparison(runs, data, plot)
