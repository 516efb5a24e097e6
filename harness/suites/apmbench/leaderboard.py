"""APM-Bench's rows of the leaderboard: the paper's Tables 3 and 4 exactly as `compare` and
`view` show them, each cell with the field of report.json (or manifest.json) it came from."""

from __future__ import annotations

from collections.abc import Mapping

from apmbench.harness.json_types import JSON
from apmbench.harness.reports.scores import MANIFEST, REPORT, ScoreRow, pointer, scores
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.metrics import Report
from apmbench.harness.suites.apmbench.report import (
    TABLE3_HEADER,
    TABLE4_HEADER,
    table3_row,
    table4_row,
)

TABLE3_TITLE = "Utility, latency and storage (paper Table 3)"
TABLE4_TITLE = "Task scores (paper Table 4)"

# Where each cell of `table3_row` and `table4_row` (after the method) is read, in their order.
TABLE3_FIELDS = (
    pointer(MANIFEST, "system", "capabilities", "streaming_ingest"),
    pointer(REPORT, "storage", "peak_bytes_max"),  # Persistent: yes when above 0
    pointer(REPORT, "families", "cross_session_understanding", "score"),
    pointer(REPORT, "families", "real_time_perception", "score"),
    pointer(REPORT, "families", "adaptive_response", "score"),
    pointer(REPORT, "overall", "score"),
    pointer(REPORT, "latency", "time_to_first_token_s", "mean"),
    pointer(REPORT, "latency", "time_to_answer_s", "mean"),
    pointer(REPORT, "storage", "storage_per_hour_bytes"),
)
TABLE4_FIELDS = (
    *(pointer(REPORT, "tasks", t, "score") for t in (*tasks.MCQA_TASKS, *tasks.ADAPTIVE_TASKS)),
    pointer(REPORT, "overall", "score"),
    pointer(REPORT, "evidence_availability", "evidence_available_accuracy"),
    pointer(REPORT, "evidence_availability", "evidence_unavailable_detection"),
)


def leaderboard_rows(report: Report, manifest: Mapping[str, JSON]) -> list[ScoreRow]:
    docs = {REPORT: report, MANIFEST: manifest}
    return [
        ScoreRow(
            TABLE3_TITLE,
            TABLE3_HEADER[1:],
            scores(docs, table3_row(report, manifest)[1:], TABLE3_FIELDS),
        ),
        ScoreRow(
            TABLE4_TITLE,
            TABLE4_HEADER[1:],
            scores(docs, table4_row(report, manifest)[1:], TABLE4_FIELDS),
        ),
    ]
