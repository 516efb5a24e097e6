"""APM-Bench (arXiv 2609.37559) as a suite: the seam's implementation.

Everything here delegates to the suite's own modules: dataset (D.3-D.8 and
the project's dataset.json), plan (main pass, forks, EA replays), metrics
(B.1-B.7, Eq. 1-3), rubric (A.3), report and compare (Tables 3, 4, 10-13).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from rich.table import Table

from apmbench.harness.json_types import JSON
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.reports.scores import ScoreRow
from apmbench.harness.run.plan import Segment
from apmbench.harness.run.records import SessionRecord
from apmbench.harness.scoring.answers import FAILURE
from apmbench.harness.scoring.judge.backend import ChatBackend
from apmbench.harness.scoring.judge.judging import JudgeOutcome, JudgeRequest
from apmbench.harness.suites.apmbench import (
    compare,
    metrics,
    organisation,
    report,
    rubric,
    summary,
    tasks,
)
from apmbench.harness.suites.apmbench.dataset import Candidate, Dataset, Probe, load_dataset
from apmbench.harness.suites.apmbench.metrics import Report
from apmbench.harness.suites.apmbench.plan import plan_trajectory
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.suites.base import (
    ComparedRun,
    DatasetFormat,
    Headline,
    MutableRow,
    Row,
    ScoringRecord,
    Suite,
    ViewBars,
    ViewTable,
    preset_writer,
)

Item = tuple[Candidate, Probe]


def _items(dataset: Dataset) -> dict[str, Item]:
    return {p.probe_id: (c, p) for c in dataset.candidates for p in c.probes}


class APMBench(Suite[Dataset, Item, Report]):
    name: ClassVar[str] = "apmbench"
    title: ClassVar[str] = "APM-Bench"
    scoring_schema: ClassVar[int] = metrics.SCHEMA_VERSION

    synthetic_presets: ClassVar[tuple[str, ...]] = tuple(PRESETS)
    variants: ClassVar[Mapping[str, str]] = organisation.VARIANTS

    def dataset_format(self) -> DatasetFormat[Dataset]:
        from apmbench.harness.suites.apmbench.split import split
        from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset
        from apmbench.harness.suites.apmbench.synth.writer import build

        return DatasetFormat(
            load_dataset,
            split,
            synthetic_dataset,
            preset_writer(PRESETS, build),
            organisation.load_organised,
        )

    def blind_instance_ids(self, public: Dataset, labelled: Dataset) -> dict[str, str]:
        from apmbench.harness.suites.apmbench.split import instance_ids

        return instance_ids(public, labelled)

    def plan(self, dataset: Dataset, trajectory: Trajectory, can_import: bool) -> list[Segment]:
        return plan_trajectory(dataset, trajectory, can_import)

    def grade(self, item: Item, text: str) -> metrics.ChoiceGrade | metrics.DecisionGrade:
        return metrics.grade_instance(item[0], item[1], text)

    def answer_key(self, graded: Mapping[str, object]) -> object:
        if graded.get("format") == FAILURE:
            return None
        return (graded.get("decision"), graded.get("answer"))

    def items(self, dataset: Dataset) -> dict[str, Item]:
        return _items(dataset)

    def judge_requests(
        self, dataset: Dataset, instances: Sequence[MutableRow]
    ) -> list[JudgeRequest]:
        requests = []
        for row in metrics.rows(instances):
            if tasks.spec(row["task"]).metric is not tasks.Metric.GATED_JUDGE:
                continue
            row["judge_score"] = None
            passed = bool(row["gate_passed"])
            row["judge"] = {"status": metrics.NOT_CONFIGURED if passed else metrics.NOT_NEEDED}
            if passed:
                item = self.item_of(dataset, row["instance_id"])
                assert item is not None, "scoring refuses instances not in the dataset"
                candidate, probe = item
                messages = rubric.request_messages(candidate, probe, row)
                requests.append(
                    JudgeRequest(row["instance_id"], messages, rubric.CORRECTION_TEMPLATE)
                )
        return requests

    def apply_verdicts(
        self, instances: Sequence[MutableRow], outcomes: Mapping[str, JudgeOutcome]
    ) -> None:
        for row in metrics.rows(instances):
            outcome = outcomes.get(row["instance_id"])
            if outcome is not None:
                row["judge"] = outcome.as_dict()
                row["judge_score"] = outcome.score

    def reference_judge(self, dataset_root: Path) -> ChatBackend:
        from apmbench.harness.suites.apmbench.reference_judge import open_reference_judge

        return open_reference_judge(dataset_root)

    def judge_templates_sha256(self) -> str:
        return rubric.templates_sha256()

    def score(
        self, instances: Sequence[Row], sessions: Sequence[SessionRecord], scoring: ScoringRecord
    ) -> Report:
        return metrics.score(instances, sessions, scoring)

    def headline(self, report: Report) -> Headline:
        return Headline.measured(
            report["overall"]["score"], "Overall", report["latency"], report["storage"]
        )

    def render(self, report_: Report, manifest: Mapping[str, JSON]) -> str:
        return report.render_markdown(report_, manifest)

    def summary_tables(self, reports: Sequence[Report], names: Sequence[str]) -> list[Table]:
        return summary.summary_tables(reports, names)

    def view_tables(self, runs: Sequence[ComparedRun[Report]]) -> list[ViewTable]:
        from apmbench.harness.suites.apmbench import view

        return view.view_tables(runs)

    def view_bars(self, report_: Report) -> list[ViewBars]:
        from apmbench.harness.suites.apmbench import view

        return view.view_bars(report_)

    def leaderboard_rows(self, report_: Report, manifest: Mapping[str, JSON]) -> list[ScoreRow]:
        from apmbench.harness.suites.apmbench import leaderboard

        return leaderboard.leaderboard_rows(report_, manifest)

    def comparison(self, runs: Sequence[ComparedRun[Report]]) -> compare.Comparison:
        return compare.comparison(runs)

    def render_comparison(
        self, runs: Sequence[ComparedRun[Report]], data: Mapping[str, object], plot: str | None
    ) -> str:
        return compare.render_comparison(runs, data, plot)
