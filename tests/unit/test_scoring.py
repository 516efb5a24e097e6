"""Metric arithmetic on small hand-computed cases."""

from __future__ import annotations

from typing import Any

import pytest

from apmbench.harness.scoring import measures
from apmbench.harness.suites.apmbench import metrics as scoring


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
        "user_turns": 2,
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
    out = measures.storage(sessions)
    assert out["trajectories_counted"] == 2
    assert out["storage_per_hour_bytes"] == pytest.approx((300 / 1.0 + 600 / 0.5) / 2)
    assert out["peak_bytes_mean"] == 450 and out["peak_bytes_max"] == 600


def test_latency_percentiles() -> None:
    rows = [
        {"task": "ER", "ttft_s": float(i), "total_s": float(i) + 1, "rtf": 0.5}
        for i in range(1, 101)
    ] + [{"task": "ER", "ttft_s": None, "total_s": 2.0, "rtf": None}]
    out = scoring.latency(rows, [session("T", 0, 10, 1)])
    assert out["time_to_first_token_s"]["n"] == 100
    assert out["time_to_first_token_s"]["p50"] == pytest.approx(50.5)
    assert out["time_to_first_token_s"]["p99"] == pytest.approx(99.01)
    assert out["queries_without_output"] == 1
    assert out["real_time_factor"]["mean"] == 0.5


# The paper's Table 4, every row with an Overall: ER EST TR | ACR CT OCR STU |
# ERA RCR MPA PRM TPG | Overall (rows 2-7 video memory, 8-13 text memory).
TABLE4 = [
    (
        "SimpleStream",
        "27.52 28.52 25.57 56.44 35.90 73.49 46.41 50.89 30.22 26.54 32.11 22.64 37.58",
    ),
    (
        "Seed-2.0-Lite",
        "54.13 63.09 46.18 57.43 43.59 53.61 48.37 41.97 65.63 24.45 51.56 25.80 49.03",
    ),
    (
        "Gemini 3.6 Flash",
        "73.70 71.81 62.60 67.33 42.05 87.95 59.48 47.73 73.62 26.52 61.80 25.58 60.21",
    ),
    (
        "Qwen3.8-27B",
        "54.74 48.99 46.56 55.94 34.87 62.05 42.48 44.38 53.33 26.81 41.75 25.27 45.75",
    ),
    (
        "Qwen3-VL-8B-Instruct",
        "40.98 46.64 26.72 45.54 36.41 62.65 37.91 37.53 29.83 25.89 29.63 25.01 37.77",
    ),
    (
        "InternVL3.5-8B",
        "32.42 43.96 27.86 41.58 35.90 43.98 36.60 23.06 24.46 14.83 16.84 18.24 31.25",
    ),
    (
        "VideoLLaMA3-7B",
        "22.02 27.18 25.95 28.22 24.10 21.08 32.68 11.98 25.36 14.45 16.32 17.64 22.91",
    ),
    (
        "Seed-2.0-Lite",
        "49.54 48.32 38.17 62.38 43.59 55.42 48.37 49.39 71.15 25.49 46.18 28.19 47.29",
    ),
    (
        "Gemini 3.6 Flash",
        "49.85 50.67 41.98 71.29 48.21 84.94 59.48 54.20 75.68 28.82 51.01 26.01 53.54",
    ),
    (
        "Qwen3.8-27B",
        "45.26 38.59 39.31 52.97 34.36 59.04 46.41 41.59 56.63 27.18 38.11 25.98 42.38",
    ),
    (
        "Qwen3-VL-8B-Instruct",
        "30.58 39.60 24.81 48.02 33.85 59.64 42.48 38.35 34.25 23.32 31.01 25.64 36.06",
    ),
    (
        "InternVL3.5-8B",
        "25.69 31.21 27.48 45.54 37.95 54.22 39.87 27.34 29.93 15.00 17.44 18.80 31.41",
    ),
    (
        "VideoLLaMA3-7B",
        "19.88 21.14 28.24 35.64 31.28 25.30 32.03 11.66 28.35 15.86 13.03 17.11 23.78",
    ),
    ("HERMES", "36.09 34.23 32.06 39.60 33.85 69.88 24.84 35.82 24.64 17.39 19.08 18.34 33.07"),
    ("ReKV", "27.52 34.90 31.30 30.69 34.36 39.76 26.80 22.72 15.26 17.00 19.75 19.28 27.65"),
    ("FLUXMem", "32.42 41.95 33.59 26.73 20.51 34.34 28.76 29.25 23.13 17.17 20.04 18.55 28.40"),
    (
        "Flash-VStream",
        "29.97 38.59 27.10 31.19 33.85 32.53 25.49 5.32 17.70 10.82 13.07 10.15 24.69",
    ),
    ("StreamForest", "34.86 42.62 35.88 45.05 42.05 56.02 31.37 8.42 10.79 4.01 6.90 2.30 29.30"),
    ("OASIS", "36.39 40.60 29.39 57.43 36.41 74.70 43.14 52.93 52.98 22.07 28.90 23.06 41.46"),
    (
        "Video-Salmon-S",
        "17.43 15.10 12.98 17.33 20.00 31.93 22.22 22.61 23.22 15.16 14.65 14.98 18.72",
    ),
    ("VST", "20.80 23.15 17.94 10.40 29.23 16.27 11.11 5.00 17.65 16.62 20.48 16.42 17.54"),
]
TASK_ORDER = ("ER", "EST", "TR", "ACR", "CT", "OCR", "STU", "ERA", "RCR", "MPA", "PRM", "TPG")


@pytest.mark.parametrize(
    ("method", "row"), TABLE4, ids=[f"{i}-{m}" for i, (m, _) in enumerate(TABLE4)]
)
def test_family_and_overall_arithmetic_reproduces_table4(method: str, row: str) -> None:
    values = [float(v) for v in row.split()]
    by_task = {t: {"score": v} for t, v in zip(TASK_ORDER, values[:12], strict=True)}
    _, overall = scoring.family_scores(by_task)
    # Published task scores are rounded to 0.01, so Overall agrees to rounding.
    assert abs(overall["score"] - values[12]) <= 0.005, method


def adaptive(
    cid: str,
    polarity: str,
    gate: bool,
    judge: int | None,
    task: str = "RCR",
    status: str | None = None,
) -> dict[str, Any]:
    if status is None:
        status = "scored" if judge is not None else ("not_configured" if gate else "not_needed")
    return {
        "task": task,
        "candidate_id": cid,
        "instance_id": f"{cid}-{polarity}-{judge}",
        "polarity": polarity,
        "decision": "INTERVENE" if (polarity == "positive") == gate else "SILENT",
        "gate_passed": gate,
        "judge_score": judge,
        "judge": {"status": status},
        "format": "clean",
    }


# c1 has both polarities; c2 only positive probes; c3 only negative probes.
EQ_ROWS = [
    adaptive("c1", "positive", True, 4),
    adaptive("c1", "positive", False, None),  # g = 0
    adaptive("c1", "negative", True, 5),
    adaptive("c1", "negative", True, 3),
    adaptive("c2", "positive", True, 5),
    adaptive("c3", "negative", False, None),
]


def test_eq1_candidate_scores_by_hand() -> None:
    by_candidate = {c: [r for r in EQ_ROWS if r["candidate_id"] == c] for c in ("c1", "c2", "c3")}
    assert scoring.candidate_score(by_candidate["c1"]) == (2.0 + 4.0) / 2  # means of (4, 0), (5, 3)
    assert scoring.candidate_score(by_candidate["c2"]) == 5.0  # only positive probes
    assert scoring.candidate_score(by_candidate["c3"]) == 0.0  # only negative probes, gate failed


def test_eq1_task_score_is_twenty_times_the_mean_candidate_score() -> None:
    value, reason = scoring.gated_judge_score(EQ_ROWS)
    assert reason is None
    assert value == pytest.approx(20 * (3.0 + 5.0 + 0.0) / 3)


def test_eq1_only_negative_candidates() -> None:
    rows = [adaptive("n", "negative", True, 2), adaptive("n", "negative", True, 4)]
    assert scoring.gated_judge_score(rows) == (pytest.approx(60.0), None)


def test_eq3_response_quality_and_gate_pass_rate_by_hand() -> None:
    value, reason = scoring.response_quality_score(EQ_ROWS)
    # c1: positive mean 4 (the gate-failed probe is not judged), negative mean 4 -> 4;
    # c2: 5; c3 has no judged probe and is left out. 100 / 5 x mean(4, 5).
    assert reason is None and value == pytest.approx(90.0)
    rates = scoring.gate_pass_rate(EQ_ROWS)
    # positives: 2 of 3 pass; negatives: 2 of 3 pass.
    assert rates["RCR"] == pytest.approx(200 / 3)
    assert rates["ERA"] is None


def test_eq3_without_any_gate_passing_probe_is_not_a_number() -> None:
    value, reason = scoring.response_quality_score([adaptive("x", "positive", False, None)])
    assert value is None and "no probe passed the gate" in str(reason)
    # ... while Eq. 1 is defined: every probe scores 0.
    assert scoring.gated_judge_score([adaptive("x", "positive", False, None)]) == (0.0, None)


def test_without_a_judge_judge_dependent_numbers_are_null_with_the_reason() -> None:
    rows = [adaptive("c", "positive", True, None), adaptive("c", "negative", False, None)]
    assert scoring.gated_judge_score(rows) == (None, scoring.NOT_COMPUTED_JUDGE)
    assert scoring.response_quality_score(rows) == (None, scoring.NOT_COMPUTED_JUDGE)


def test_a_failed_verdict_is_never_a_default_score() -> None:
    rows = [
        adaptive("c", "positive", True, 5),
        adaptive("c", "negative", True, None, status="invalid"),
        adaptive("d", "negative", True, None, status="error"),
    ]
    value, reason = scoring.gated_judge_score(rows)
    assert value is None
    assert "2 of 3 gate-passing probes" in str(reason) and "invalid: 1" in str(reason)
    assert "error: 1" in str(reason)


def test_score_with_a_judge_computes_every_family_and_overall() -> None:
    rows: list[dict[str, Any]] = [mc(t, True, cid=t) for t in ("ER", "EST", "TR")]
    rows += [mc(t, t in ("ACR", "CT"), cid=t) for t in ("ACR", "CT", "OCR", "STU")]
    for task in ("ERA", "RCR", "MPA", "PRM", "TPG"):
        rows += [
            adaptive(task, "positive", True, 5, task=task),
            adaptive(task, "negative", False, None, task=task),
        ]
    for r in rows:
        r.update(ttft_s=0.5, total_s=1.0, rtf=0.1)
    report = scoring.score(rows, [session("T", 0, 60, 10)])
    assert report["tasks"]["MPA"]["score"] == pytest.approx(50.0)  # (5 + 0) / 2 x 20
    assert report["families"]["adaptive_response"]["score"] == pytest.approx(50.0)
    assert report["families"]["cross_session_understanding"]["score"] == 100.0
    assert report["families"]["real_time_perception"]["score"] == 50.0
    assert report["overall"]["score"] == pytest.approx(200 / 3)
    assert report["response_quality"]["average"]["score"] == pytest.approx(100.0)
    assert report["response_quality"]["tasks"]["TPG"]["gate_pass_rate"] == 50.0
    assert report["judge"]["by_status"] == {"not_needed": 5, "scored": 5}


def test_format_failures_per_task_and_in_all() -> None:
    rows = [mc("ER", False, "failure"), mc("ER", True, "repaired"), mc("OCR", True)]
    out = scoring.format_failures(rows)
    assert out["total"] == 1 and out["repaired"] == 1 and out["probes"] == 3
    assert out["by_task"] == {"ER": 1}
    assert out["rate_by_task"] == {"ER": 0.5, "OCR": 0.0}
