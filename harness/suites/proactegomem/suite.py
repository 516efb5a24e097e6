"""ProactEgoMem (proactive memory in streaming egocentric video) as a suite.

dataset (the format), tools (the tool state the harness owns), plan (per-second
steps at each proactive level, then memory QA in fresh sessions), metrics
(section 5.1: Hungarian matching, Start@τ, error, P/R/F1, mIoU, QA), report and
synth (the synthetic generator).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rich.table import Table

from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.plan import Segment
from apmbench.harness.scoring.judge.judging import JudgeOutcome, JudgeRequest
from apmbench.harness.suites.base import ComparedRun, DatasetFormat, Headline, Suite
from apmbench.harness.suites.proactegomem import judging, metrics, prompts, report
from apmbench.harness.suites.proactegomem.dataset import Dataset, load_dataset
from apmbench.harness.suites.proactegomem.plan import QAItem, StepItem, items, plan_clip
from apmbench.harness.suites.proactegomem.synth import PRESETS
from apmbench.harness.suites.proactegomem.tools import parse_step


class ProactEgoMem(Suite[Dataset, StepItem | QAItem, dict[str, Any]]):
    name: ClassVar[str] = "proactegomem"
    title: ClassVar[str] = "ProactEgoMem"
    scoring_schema: ClassVar[int] = metrics.SCHEMA_VERSION

    synthetic_presets: ClassVar[tuple[str, ...]] = tuple(PRESETS)
    # Section 5.2: one step per second, each with the frame of that second.
    required_fps: ClassVar[float | None] = 1.0

    def dataset_format(self) -> DatasetFormat[Dataset]:
        from apmbench.harness.suites.proactegomem.split import split
        from apmbench.harness.suites.proactegomem.synth import build, synthetic_dataset

        return DatasetFormat(
            load_dataset,
            split,
            synthetic_dataset,
            lambda preset, seed, out: build(PRESETS[preset], seed, out),
        )

    def plan(self, dataset: Dataset, trajectory: Trajectory, can_import: bool) -> list[Segment]:
        return plan_clip(dataset, trajectory)

    def grade(self, item: StepItem | QAItem, text: str) -> Mapping[str, Any]:
        if isinstance(item, QAItem):
            q = item.question
            return metrics.grade_qa(q.choices, q.answer, text)
        parsed = parse_step(text, item.level)
        # The step's effect depends on the tool state: metrics.score replays the clip.
        return {"format": "ok" if parsed.ok else "unparseable", "format_reason": parsed.error}

    def items(self, dataset: Dataset) -> dict[str, StepItem | QAItem]:
        return items(dataset)

    def judge_requests(
        self, dataset: Dataset, instances: Sequence[dict[str, Any]]
    ) -> list[JudgeRequest]:
        return judging.requests(instances)

    def apply_verdicts(
        self, instances: Sequence[dict[str, Any]], outcomes: Mapping[str, JudgeOutcome]
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
        self,
        instances: Sequence[Mapping[str, Any]],
        sessions: Sequence[Mapping[str, Any]],
        scoring: Mapping[str, Any],
    ) -> dict[str, Any]:
        return metrics.score(instances, sessions, scoring)

    def headline(self, report_: Mapping[str, Any]) -> Headline:
        iv = report_["levels"].get("intervention")
        return Headline(
            utility=report.start_at(iv),
            utility_label="Intervention Start@0.2",
            ttft_mean_s=report_["latency"]["time_to_first_token_s"]["mean"],
            storage_per_hour_bytes=report_["storage"]["storage_per_hour_bytes"],
        )

    def render(self, report_: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
        return report.render_markdown(report_, manifest)

    def summary_tables(
        self, reports: Sequence[Mapping[str, Any]], names: Sequence[str]
    ) -> list[Table]:
        return report.summary_tables(reports, names)

    def comparison(self, runs: Sequence[ComparedRun]) -> dict[str, Any]:
        return report.comparison(runs)

    def render_comparison(
        self, runs: Sequence[ComparedRun], data: Mapping[str, Any], plot: str | None
    ) -> str:
        return report.render_comparison(runs, data, plot)
