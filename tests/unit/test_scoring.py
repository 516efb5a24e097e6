"""Metric arithmetic on small hand-computed cases."""

from __future__ import annotations

from typing import Any

import pytest

from apmbench.harness import scoring


def mc(task: str, correct: bool, fmt: str = "clean", cid: str = "c") -> dict[str, Any]:
    return {"task": task, "candidate_id": cid, "correct": correct, "format": fmt}


def probe(task: str, polarity: str, decision: str | None, gate: bool = False) -> dict[str, Any]:
    return {
        "task": task,
        "candidate_id": f"{task}-1",
        "polarity": polarity,
        "decision": decision,
        "gate_passed": gate,
        "format": "clean" if decision else "failure",
    }


def session(tid: str, index: int, duration_s: float, state: int) -> dict[str, Any]:
    return {
        "trajectory_id": tid,
        "index": index,
        "duration_s": duration_s,
        "state_bytes": state,
        "frames": int(duration_s),
        "ingest_s": 1.0,
    }


def test_accuracy_and_family_means() -> None:
    rows = [mc("ER", True), mc("ER", False), mc("EST", True), mc("TR", False, "failure")]
    rows += [mc(t, True) for t in ("ACR", "CT", "OCR", "STU")]
    by_task = scoring.task_scores(rows)
    assert by_task["ER"]["score"] == 50.0
    assert by_task["TR"]["format_failures"] == 1
    families, overall = scoring.family_scores(by_task)
    assert families["cross_session_understanding"]["score"] == pytest.approx(50.0)
    assert families["real_time_perception"]["score"] == 100.0
    assert families["adaptive_response"]["score"] is None
    assert overall["score"] is None and "adaptive_response" in overall["reason"]


def test_overall_is_the_mean_of_the_three_families() -> None:
    by_task = {t: {"score": s} for t, s in zip(
        ("ER", "EST", "TR", "ACR", "CT", "OCR", "STU", "ERA", "RCR", "MPA", "PRM", "TPG"),
        (60, 30, 30, 80, 40, 60, 60, 50, 10, 20, 30, 40), strict=True,
    )}  # fmt: skip
    families, overall = scoring.family_scores(by_task)
    assert families["cross_session_understanding"]["score"] == 40
    assert families["real_time_perception"]["score"] == 60
    assert families["adaptive_response"]["score"] == 30
    assert overall["score"] == pytest.approx(130 / 3)


def test_a_task_without_candidates_leaves_its_family_uncomputed() -> None:
    by_task = scoring.task_scores([mc("ER", True)])
    assert by_task["EST"]["score"] is None
    families, _ = scoring.family_scores(by_task)
    assert families["cross_session_understanding"]["score"] is None
    assert "EST" in families["cross_session_understanding"]["reason"]


def test_decision_balanced_accuracy_per_task_and_pooled() -> None:
    rows = [
        probe("RCR", "positive", "INTERVENE"),
        probe("RCR", "positive", "SILENT"),
        probe("RCR", "negative", "SILENT"),
        probe("MPA", "positive", "INTERVENE"),
        probe("MPA", "negative", "INTERVENE"),
        probe("MPA", "negative", None),
    ]
    acc = scoring.decision_accuracy(rows)
    assert acc["RCR"] == {
        "positive_probes": 2,
        "negative_probes": 1,
        "P": 50.0,
        "N": 100.0,
        "BA": 75.0,
    }
    assert acc["MPA"]["P"] == 100.0 and acc["MPA"]["N"] == 0.0 and acc["MPA"]["BA"] == 50.0
    # Pooled: 2 of 3 positives, 1 of 3 negatives.
    assert acc["overall"]["P"] == pytest.approx(200 / 3)
    assert acc["overall"]["N"] == pytest.approx(100 / 3)
    assert acc["overall"]["BA"] == pytest.approx(50.0)
    assert acc["ERA"]["BA"] is None


def test_evidence_availability_balanced() -> None:
    rows = [
        {"task": "EA", "evidence_available": True, "correct": True, "format": "clean"},
        {"task": "EA", "evidence_available": True, "correct": False, "format": "clean"},
        {"task": "EA", "evidence_available": False, "correct": True, "format": "clean"},
    ]
    ea = scoring.evidence_availability(rows)
    assert ea["evidence_available_accuracy"] == 50.0
    assert ea["evidence_unavailable_detection"] == 100.0
    assert ea["balanced_accuracy"] == 75.0


def test_storage_per_hour_eq2_and_peaks() -> None:
    sessions = [
        # T1: prior states 100 (0.5 h), 300 (1.0 h cumulative); the last export is not prior.
        session("T1", 0, 1800, 100),
        session("T1", 1, 1800, 300),
        session("T1", 2, 3600, 10_000),
        # T2: constant 600 B held over 0.25 h + 0.25 h: the peak at its last occurrence.
        session("T2", 0, 900, 600),
        session("T2", 1, 900, 600),
        session("T2", 2, 900, 50),
        # T3: one session, no prior state: not counted.
        session("T3", 0, 600, 99),
    ]
    out = scoring.storage(sessions)
    assert out["trajectories_counted"] == 2
    assert out["storage_per_hour_bytes"] == pytest.approx((300 / 1.0 + 600 / 0.5) / 2)
    assert out["peak_bytes_mean"] == 450 and out["peak_bytes_max"] == 600


def test_latency_percentiles() -> None:
    rows = [{"ttft_s": float(i), "total_s": float(i) + 1, "rtf": 0.5} for i in range(1, 101)] + [
        {"ttft_s": None, "total_s": 2.0, "rtf": None}
    ]
    out = scoring.latency(rows, [session("T", 0, 10, 1)])
    assert out["time_to_first_token_s"]["n"] == 100
    assert out["time_to_first_token_s"]["p50"] == pytest.approx(50.5)
    assert out["time_to_first_token_s"]["p99"] == pytest.approx(99.01)
    assert out["queries_without_output"] == 1
    assert out["real_time_factor"]["mean"] == 0.5
