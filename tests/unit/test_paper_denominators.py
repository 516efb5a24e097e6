"""Which probes the paper's denominators and means are over (APM-Bench, arXiv 2609.37559).

Table 11: "Each method is evaluated on 5,371 probes; rate is count divided by
5,371", the probes of the twelve tasks (887 + 716 single instances and 3,768
adaptive probes, section 3.3); the Evidence Availability set is reported on
its own (B.7). The latency means of B.3 are over the same main probes.
"""

from __future__ import annotations

from typing import Any

import pytest

from apmbench.harness.suites.apmbench import metrics, tasks

# Section 3.3: 887 Cross-session Understanding + 716 Real-time Perception
# candidates, one instance each, and 3,768 adaptive probes.
PAPER_MAIN_PROBES = 887 + 716 + 3768


def row(task: str, fmt: str = "clean", ttft: float | None = 1.0) -> dict[str, Any]:
    return {"task": task, "format": fmt, "ttft_s": ttft, "total_s": 2.0, "rtf": 0.5}


def test_paper_counts_add_up_to_table_11_denominator() -> None:
    assert PAPER_MAIN_PROBES == 5371


def test_format_failure_rate_divides_by_the_main_probes_only() -> None:
    # A paper-sized run: 5,371 main probes with 53 failures, plus the 260 EA
    # questions of Table 13, of which a broken system fails 100.
    rows = [row("ER", "failure") for _ in range(53)]
    rows += [row("ACR") for _ in range(PAPER_MAIN_PROBES - 53)]
    rows += [row("EA", "failure") for _ in range(100)] + [row("EA") for _ in range(160)]
    out = metrics.format_failures(rows)
    assert out["probes"] == 5371
    assert out["total"] == 53
    assert out["rate"] == pytest.approx(53 / 5371)
    assert "EA" not in out["by_task"] and "EA" not in out["rate_by_task"]
    # ... and the EA failures are reported on their own.
    assert (
        metrics.evidence_availability(
            [dict(r, evidence_available=True, correct=False) for r in rows if r["task"] == "EA"]
        )["format_failures"]
        == 100
    )


def test_latency_means_exclude_the_evidence_availability_replays() -> None:
    # The EA replays hold two sessions of history, so they answer fast; mixed
    # in, they would make a slow system look fast.
    rows = [row("ER", ttft=10.0) for _ in range(4)] + [row("EA", ttft=0.1) for _ in range(4)]
    out = metrics.latency(rows, [])
    assert out["time_to_first_token_s"]["mean"] == pytest.approx(10.0)
    assert out["time_to_first_token_s"]["n"] == 4
    assert out["evidence_availability"]["time_to_first_token_s"]["mean"] == pytest.approx(0.1)
    assert out["evidence_availability"]["time_to_first_token_s"]["n"] == 4


def test_main_tasks_are_the_twelve() -> None:
    assert len(tasks.MAIN_TASKS) == 12 and tasks.EVIDENCE_AVAILABILITY not in tasks.MAIN_TASKS
