"""EgoProbe (long-range and exact memory in streaming egocentric video) as a suite.

Everything is a function of the suite's modules: dataset (the format), plan
(one chronological pass; dialogues as R1 asks with an R2 follow-up), metrics
(sections 4.3-4.4, appendix D.4), report (tables, compare, bucket plot) and
synth (the synthetic generator).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.plan import Segment
from apmbench.harness.scoring.answers import FAILURE
from apmbench.harness.suites.base import (
    DatasetFormat,
    Grading,
    Headline,
    ReportFormat,
    Suite,
    preset_writer,
)
from apmbench.harness.suites.egoprobe import metrics, report
from apmbench.harness.suites.egoprobe.dataset import Dataset, load_dataset
from apmbench.harness.suites.egoprobe.metrics import Report
from apmbench.harness.suites.egoprobe.plan import Item, items, plan_video
from apmbench.harness.suites.egoprobe.synth import PRESETS


def _answer_key(graded: Mapping[str, object]) -> object:
    return None if graded.get("format") == FAILURE else graded.get("answer")


def _headline(report_: Report) -> Headline:
    return Headline.measured(
        report_["single_turn"]["all"]["accuracy"],
        "Single-turn accuracy, Base and Echo pooled (the project's)",
        report_["latency"],
        report_["storage"],
    )


def _write_plots(data: Mapping[str, object], out: Path) -> None:
    report.plot_buckets(data, out / report.BUCKET_PLOT)


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

    def grading(self) -> Grading[Dataset, Item]:
        return Grading(items, metrics.grade, _answer_key)

    def report_format(self) -> ReportFormat[Report]:
        from apmbench.harness.suites.egoprobe import leaderboard

        return ReportFormat(
            metrics.score,
            _headline,
            report.render_markdown,
            report.summary_tables,
            report.comparison,
            report.render_comparison,
            write_plots=_write_plots,
            leaderboard_rows=leaderboard.leaderboard_rows,
        )
