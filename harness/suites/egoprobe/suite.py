"""EgoProbe (long-range and exact memory in streaming egocentric video) as a suite.

Everything delegates to the suite's modules: dataset (the format), plan
(one chronological pass; dialogues as R1 asks with an R2 follow-up), metrics
(sections 4.3-4.4, appendix D.4), report (tables, compare, bucket plot) and
synth (the synthetic generator).
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
from apmbench.harness.suites.base import (
    ComparedRun,
    DatasetFormat,
    Headline,
    Row,
    ScoringRecord,
    Suite,
    preset_writer,
)
from apmbench.harness.suites.egoprobe import metrics, report
from apmbench.harness.suites.egoprobe.dataset import Dataset, load_dataset
from apmbench.harness.suites.egoprobe.metrics import Report
from apmbench.harness.suites.egoprobe.plan import Item, items, plan_video
from apmbench.harness.suites.egoprobe.synth import PRESETS


class EgoProbe(Suite[Dataset, Item, Report]):
    name: ClassVar[str] = "egoprobe"
    title: ClassVar[str] = "EgoProbe"
    scoring_schema: ClassVar[int] = metrics.SCHEMA_VERSION

    synthetic_presets: ClassVar[tuple[str, ...]] = tuple(PRESETS)

    def dataset_format(self) -> DatasetFormat[Dataset]:
        from apmbench.harness.suites.egoprobe.split import split
        from apmbench.harness.suites.egoprobe.synth import build, synthetic_dataset

        return DatasetFormat(load_dataset, split, synthetic_dataset, preset_writer(PRESETS, build))

    def plan(self, dataset: Dataset, trajectory: Trajectory, can_import: bool) -> list[Segment]:
        return plan_video(dataset, trajectory)

    def grade(self, item: Item, text: str) -> metrics.YesNoGrade | metrics.ChoiceGrade:
        return metrics.grade(item, text)

    def answer_key(self, graded: Mapping[str, object]) -> object:
        return None if graded.get("format") == FAILURE else graded.get("answer")

    def items(self, dataset: Dataset) -> dict[str, Item]:
        return items(dataset)

    def score(
        self, instances: Sequence[Row], sessions: Sequence[SessionRecord], scoring: ScoringRecord
    ) -> Report:
        return metrics.score(instances, sessions, scoring)

    def headline(self, report_: Report) -> Headline:
        return Headline.measured(
            report_["single_turn"]["all"]["accuracy"],
            "Single-turn accuracy, Base and Echo pooled (the project's)",
            report_["latency"],
            report_["storage"],
        )

    def render(self, report_: Report, manifest: Mapping[str, JSON]) -> str:
        return report.render_markdown(report_, manifest)

    def summary_tables(self, reports: Sequence[Report], names: Sequence[str]) -> list[Table]:
        return report.summary_tables(reports, names)

    def leaderboard_rows(self, report_: Report, manifest: Mapping[str, JSON]) -> list[ScoreRow]:
        from apmbench.harness.suites.egoprobe import leaderboard

        return leaderboard.leaderboard_rows(report_, manifest)

    def comparison(self, runs: Sequence[ComparedRun[Report]]) -> report.Comparison:
        return report.comparison(runs)

    def write_plots(self, data: Mapping[str, object], out: Path) -> None:
        report.plot_buckets(data, out / report.BUCKET_PLOT)

    def render_comparison(
        self, runs: Sequence[ComparedRun[Report]], data: Mapping[str, object], plot: str | None
    ) -> str:
        return report.render_comparison(runs, data, plot)
