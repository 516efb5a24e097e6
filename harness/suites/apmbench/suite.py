"""APM-Bench (arXiv 2609.37559) as a suite: the seam's implementation.

Everything here delegates to the suite's own modules: dataset (D.3-D.8 and
the project's dataset.json), plan (main pass, forks, EA replays), metrics
(B.1-B.7, Eq. 1-3), rubric (A.3), report and compare (Tables 3, 4, 10-13).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.plan import Segment
from apmbench.harness.scoring.answers import FAILURE
from apmbench.harness.suites.apmbench import compare, metrics, organisation, report, summary
from apmbench.harness.suites.apmbench.dataset import Candidate, Dataset, Probe, load_dataset
from apmbench.harness.suites.apmbench.metrics import Report
from apmbench.harness.suites.apmbench.plan import plan_trajectory
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.suites.base import (
    DatasetFormat,
    Grading,
    Headline,
    ReportFormat,
    Suite,
    preset_writer,
)

Item = tuple[Candidate, Probe]


def _items(dataset: Dataset) -> dict[str, Item]:
    return {p.probe_id: (c, p) for c in dataset.candidates for p in c.probes}


def _grade(item: Item, text: str) -> metrics.ChoiceGrade | metrics.DecisionGrade:
    return metrics.grade_instance(item[0], item[1], text)


def _answer_key(graded: Mapping[str, object]) -> object:
    if graded.get("format") == FAILURE:
        return None
    return (graded.get("decision"), graded.get("answer"))


def _headline(report_: Report) -> Headline:
    return Headline.measured(
        report_["overall"]["score"], "Overall", report_["latency"], report_["storage"]
    )


class APMBench(Suite[Dataset, Item, Report]):
    name: ClassVar[str] = "apmbench"
    title: ClassVar[str] = "APM-Bench"
    scoring_schema: ClassVar[int] = metrics.SCHEMA_VERSION

    synthetic_presets: ClassVar[tuple[str, ...]] = tuple(PRESETS)
    variants: ClassVar[Mapping[str, str]] = organisation.VARIANTS

    def dataset_format(self) -> DatasetFormat[Dataset]:
        from apmbench.harness.suites.apmbench.split import instance_ids, split
        from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset
        from apmbench.harness.suites.apmbench.synth.writer import build

        return DatasetFormat(
            load_dataset,
            split,
            synthetic_dataset,
            preset_writer(PRESETS, build),
            organisation.load_organised,
            blind_instance_ids=instance_ids,
        )

    def plan(self, dataset: Dataset, trajectory: Trajectory, can_import: bool) -> list[Segment]:
        return plan_trajectory(dataset, trajectory, can_import)

    def grading(self) -> Grading[Dataset, Item]:
        from apmbench.harness.suites.apmbench.judging import JUDGING
        from apmbench.harness.suites.apmbench.reference_judge import open_reference_judge

        return Grading(_items, _grade, _answer_key, JUDGING, open_reference_judge)

    def report_format(self) -> ReportFormat[Report]:
        from apmbench.harness.suites.apmbench import leaderboard, view

        return ReportFormat(
            metrics.score,
            _headline,
            report.render_markdown,
            summary.summary_tables,
            compare.comparison,
            compare.render_comparison,
            leaderboard_rows=leaderboard.leaderboard_rows,
            view_tables=view.view_tables,
            view_bars=view.view_bars,
        )
