"""ProactEgoMem's row of the leaderboard: the columns of its compare and summary table (the
Intervention level's Start@0.2, start error, P/R/F1 and mIoU, the Notification level's
Start@0.2 and F1, QA accuracy per memory condition) and the cost every report states, each
with its field of report.json."""

from __future__ import annotations

from collections.abc import Mapping

from apmbench.harness.json_types import JSON
from apmbench.harness.reports.confinement import storage_verified
from apmbench.harness.reports.scores import (
    REPORT,
    ScoreRow,
    answer_score,
    pointer,
    scores,
    storage_score,
    ttft_score,
)
from apmbench.harness.suites.proactegomem import prompts
from apmbench.harness.suites.proactegomem.metrics import Report
from apmbench.harness.suites.proactegomem.report import SUMMARY_COLUMNS, summary_cells
from apmbench.harness.suites.proactegomem.tools import INTERVENTION, NOTIFICATION

TITLE = "ProactEgoMem (%; errors in s)"


def _level(level: str, *keys: str) -> str:
    return pointer(REPORT, "levels", level, *keys)


# Where each of `summary_cells` is read, in its order.
FIELDS = (
    _level(INTERVENTION, "start_at", "0.2"),
    _level(INTERVENTION, "abs_error_s"),
    _level(INTERVENTION, "abs_error_sd_s"),
    _level(INTERVENTION, "precision"),
    _level(INTERVENTION, "recall"),
    _level(INTERVENTION, "f1"),
    _level(INTERVENTION, "miou"),
    _level(NOTIFICATION, "start_at", "0.2"),
    _level(NOTIFICATION, "f1"),
    *(pointer(REPORT, "qa", c, "accuracy") for c in prompts.CONDITIONS),
)


def leaderboard_rows(report: Report, manifest: Mapping[str, JSON]) -> list[ScoreRow]:
    cells = scores({REPORT: report}, summary_cells(report), FIELDS)
    return [
        ScoreRow(
            TITLE,
            (*SUMMARY_COLUMNS[1:], "TTFT mean (s)", "Answer mean (s)", "Storage/hr"),
            (
                *cells,
                ttft_score(report),
                answer_score(report),
                storage_score(report, storage_verified(manifest)),
            ),
        )
    ]
