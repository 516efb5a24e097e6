"""EgoProbe's row of the leaderboard: the columns of its compare table (single-turn accuracy
on Base and Echo, by recall bucket, the two-turn dialogues, the share of wrong Echo answers
on an event distractor) and the cost every report states, each with its field of
report.json."""

from __future__ import annotations

from collections.abc import Mapping

from apmbench.harness.json_types import JSON
from apmbench.harness.reports.confinement import storage_verified
from apmbench.harness.reports.format import num
from apmbench.harness.reports.scores import (
    REPORT,
    ScoreRow,
    answer_score,
    pointer,
    scores,
    storage_score,
    ttft_score,
)
from apmbench.harness.suites.egoprobe.dataset import BUCKET_NAMES
from apmbench.harness.suites.egoprobe.metrics import Report

TITLE = "EgoProbe accuracy (%)"
HEADER = (
    "Base",
    "Echo",
    *BUCKET_NAMES,
    "R1",
    "Two-turn",
    "Wrong Echo answers on an event distractor",
)
FIELDS = (
    pointer(REPORT, "single_turn", "base", "accuracy"),
    pointer(REPORT, "single_turn", "echo", "accuracy"),
    *(pointer(REPORT, "buckets", b, "all", "accuracy") for b in BUCKET_NAMES),
    pointer(REPORT, "dialogues", "r1_accuracy"),
    pointer(REPORT, "dialogues", "two_turn_accuracy"),
    pointer(REPORT, "event_linked", "share_event_linked"),
)


def leaderboard_rows(report: Report, manifest: Mapping[str, JSON]) -> list[ScoreRow]:
    # The compare table's cells: every one a percentage with one decimal.
    shown = [
        num(report["single_turn"]["base"]["accuracy"], 1),
        num(report["single_turn"]["echo"]["accuracy"], 1),
        *(num(report["buckets"][b]["all"]["accuracy"], 1) for b in BUCKET_NAMES),
        num(report["dialogues"]["r1_accuracy"], 1),
        num(report["dialogues"]["two_turn_accuracy"], 1),
        num(report["event_linked"]["share_event_linked"], 1),
    ]
    cells = scores({REPORT: report}, shown, FIELDS)
    return [
        ScoreRow(
            TITLE,
            (*HEADER, "TTFT mean (s)", "Answer mean (s)", "Storage/hr"),
            (
                *cells,
                ttft_score(report),
                answer_score(report),
                storage_score(report, storage_verified(manifest)),
            ),
        )
    ]
