"""The recorded `null` reports of `mini` and `tiny`, checked against expectations derived
from the datasets alone, without the scoring code.

test_report_unchanged.py holds a run equal to its recorded report; that cannot catch a
regression blessed by re-recording. These expectations come from the candidate files
(for `tiny`, the synthetic generator's own ground truth) and from what `null` is
specified to do (adapters/systems/null.py: answer "A", stay SILENT, export its counts):

- a multiple-choice task scores the share of its candidates whose correct option is A;
- every decision probe is answered SILENT: P = 0, N = 100 where negatives exist, BA = 50
  where both exist; the probe counts are the positives and negatives the files list;
- ERA, whose answer is due at its positive probe, scores 0 (never given);
- Evidence Availability: "A" is right on available questions whose answer is A, and
  never detects an unavailable one;
- storage: the state is exported after every completed session but the last, at the
  cumulative hours the dataset's session times add up to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
MCQA = ("ACR", "CT", "ER", "EST", "OCR", "STU", "TR")
DECISIONS = ("ERA", "RCR", "MPA", "PRM", "TPG")


def _seconds(clock: str) -> int:
    h, m, s = (int(x) for x in clock.split(":"))
    return (h * 60 + m) * 60 + s


def _candidates(root: Path) -> list[dict[str, Any]]:
    return [
        c
        for path in sorted((root / "candidates").glob("*.json"))
        for c in json.loads(path.read_text())
    ]


def _share_a(rows: list[dict[str, Any]]) -> float:
    return 100.0 * sum(r["correct_option_id"] == "A" for r in rows) / len(rows)


def _probes(c: dict[str, Any]) -> tuple[int, int]:
    if "positive_heartbeat" in c:
        return 1, len(c["negative_heartbeats"])
    ideal = c.get("ideal_response_windows") or [c["ideal_response_window"]]
    return len(ideal), len(c["negative_or_silence_windows"])


def expected_null(root: Path) -> dict[str, Any]:
    cands = _candidates(root)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for c in cands:
        by_task.setdefault(c["task_type"], []).append(c)
    tasks = {t: _share_a(by_task[t]) for t in MCQA if t in by_task}
    decisions: dict[str, dict[str, Any]] = {}
    totals = [0, 0]
    for t in DECISIONS:
        pos = sum(_probes(c)[0] for c in by_task.get(t, []))
        neg = sum(_probes(c)[1] for c in by_task.get(t, []))
        totals[0] += pos
        totals[1] += neg
        decisions[t] = _decision_cell(pos, neg)
    decisions["overall"] = _decision_cell(*totals)
    ea = by_task.get("EA", [])
    available = [c for c in ea if c["evidence_available"]]
    unavailable = [c for c in ea if not c["evidence_available"]]
    dataset = json.loads((root / "dataset.json").read_text())
    hours = {}
    for t in dataset["trajectories"]:
        spans = [_seconds(s["end_time"]) - _seconds(s["start_time"]) for s in t["sessions"]]
        cumulative = [sum(spans[: i + 1]) / 3600 for i in range(len(spans) - 1)]
        hours[t["trajectory_id"]] = cumulative
    return {
        "tasks": tasks,
        "decisions": decisions,
        "ea": {
            "n_available": len(available),
            "n_unavailable": len(unavailable),
            "evidence_available_accuracy": _share_a(available) if available else None,
            "evidence_unavailable_detection": 0.0 if unavailable else None,
        },
        "hours": hours,
    }


def _decision_cell(pos: int, neg: int) -> dict[str, Any]:
    return {
        "positive_probes": pos,
        "negative_probes": neg,
        "P": 0.0 if pos else None,
        "N": 100.0 if neg else None,
        "BA": 50.0 if pos and neg else None,
    }


@pytest.fixture(params=["mini", "tiny"])
def case(request: pytest.FixtureRequest, mini: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    root = mini if request.param == "mini" else synthetic_dataset("tiny", 0)
    recorded = json.loads((RECORDED / f"{request.param}-null.json").read_text())
    return recorded, expected_null(root)


def test_multiple_choice_scores(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    recorded, want = case
    got = {t: recorded["tasks"][t]["score"] for t in want["tasks"]}
    assert got == pytest.approx(want["tasks"])


def test_decision_cells(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    recorded, want = case
    for task, cell in want["decisions"].items():
        mine = recorded["decision_accuracy"][task]
        assert {k: mine[k] for k in cell} == cell, task
    era = recorded["tasks"]["ERA"]["score"]
    assert era in (0.0, None)  # never answered; None where the judge would be needed


def test_evidence_availability(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    recorded, want = case
    ea = recorded["evidence_availability"]
    for key, value in want["ea"].items():
        assert ea[key] == value, key


def test_storage_hours(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    recorded, want = case
    for row in recorded["storage"]["trajectories"]:
        hours = [p["cumulative_hours"] for p in row["prior_states"]]
        assert hours == pytest.approx(want["hours"][row["trajectory_id"]])
        # null's state is its counts as compact JSON: 37 bytes of keys and braces plus digits.
        assert all(38 <= p["bytes"] <= 50 for p in row["prior_states"])
