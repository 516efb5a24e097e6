"""ProactEgoMem's matching and metrics against hand-computed values (paper section 5.1).

Defaults: min_sim 0.5, alpha 0.5, p 1.5, window [-2 s, +5 s]; cost
alpha(1 - sim) + (1 - alpha)(|Δ| / W)^p with W the side Δ falls on.
"""

from __future__ import annotations

import math

import pytest

from apmbench.harness.suites.proactegomem.metrics import (
    Params,
    Span,
    iou,
    match,
    score_levels,
    summarize,
    word_match,
)
from apmbench.harness.suites.proactegomem.tools import INTERVENTION, NOTIFICATION


def at(t: float, text: str = "tap") -> Span:
    return Span(t, t, text)


def test_hungarian_beats_greedy_on_total_cost() -> None:
    # Greedy would take the zero-cost edge P-Y (0 + 0.5 * (3.5/5)^1.5 = 0.2928 in all);
    # the optimum pairs P-X and Q-Y: 0.5 * (1/5)^1.5 + 0.5 * (2.5/5)^1.5 = 0.0447 + 0.1768.
    pairs = match([at(11), at(13.5)], [at(10), at(11)], word_match, NOTIFICATION)
    assert [(q.pred, q.truth, q.delta) for q in pairs] == [(0, 0, 1.0), (1, 1, 2.5)]


def test_ties_go_to_the_earlier_prediction() -> None:
    pairs = match([at(11), at(11)], [at(10)], word_match, NOTIFICATION)
    assert [(q.pred, q.truth) for q in pairs] == [(0, 0)]
    # One prediction equally far from two truths (symmetric window): one match, |Δ| = 5.
    sym = Params(early_s=5.0, late_s=5.0)
    pairs = match([at(15)], [at(10), at(20)], word_match, NOTIFICATION, sym)
    assert len(pairs) == 1 and abs(pairs[0].delta) == 5.0


def test_window_is_asymmetric_with_a_hard_cutoff() -> None:
    truth = [at(10)]
    assert match([at(8)], truth, word_match, NOTIFICATION)[0].delta == -2.0
    assert match([at(7.9)], truth, word_match, NOTIFICATION) == []
    assert match([at(15)], truth, word_match, NOTIFICATION)[0].delta == 5.0
    assert match([at(15.01)], truth, word_match, NOTIFICATION) == []


def test_similarity_below_threshold_admits_no_edge() -> None:
    assert match([at(10, "You just turned on the lamp")], [at(10, "tap")], word_match,
                 NOTIFICATION) == []  # fmt: skip
    assert match([at(10, "You just turned on the tap.")], [at(10, "tap")], word_match,
                 NOTIFICATION)[0].sim == 1.0  # fmt: skip


def test_start_at_tau_error_and_sigma() -> None:
    preds = [at(10), at(20.3), at(31), at(38)]
    truths = [at(10), at(20), at(30), at(40)]
    pairs = match(preds, truths, word_match, NOTIFICATION)
    assert sorted(abs(q.delta) for q in pairs) == pytest.approx([0.0, 0.3, 1.0, 2.0])
    m = summarize(pairs, len(preds), len(truths), NOTIFICATION)
    assert m["start_at"] == pytest.approx({"0.2": 25.0, "0.5": 50.0, "1": 75.0, "2": 100.0})
    assert m["abs_error_s"] == pytest.approx(0.825)
    # population sigma: sqrt((0.825^2 + 0.525^2 + 0.175^2 + 1.175^2) / 4)
    assert m["abs_error_sd_s"] == pytest.approx(math.sqrt(2.3675 / 4))
    assert (m["precision"], m["recall"], m["f1"]) == (100.0, 100.0, 100.0)


def test_unmatched_predictions_cost_precision() -> None:
    preds = [at(10), at(50), at(60, "lamp")]
    truths = [at(10), at(30)]
    m = summarize(match(preds, truths, word_match, NOTIFICATION), 3, 2, NOTIFICATION)
    assert m["matched"] == 1
    assert m["precision"] == pytest.approx(100 / 3)
    assert m["recall"] == pytest.approx(50.0)
    # F1 = 2PR/(P+R) = 2 (1/3)(1/2) / (5/6) = 0.4
    assert m["f1"] == pytest.approx(40.0)


def test_intervals_match_on_overlap_and_miou_scores_unmatched_as_zero() -> None:
    truths = [Span(10, 20, "tap"), Span(15, 25, "lamp"), Span(40, 50, "fan")]
    preds = [Span(12, 22, "tap"), Span(16, 18, "lamp"), Span(30, 35, "tap")]
    assert iou(preds[0], truths[0]) == pytest.approx(8 / 12)
    assert iou(preds[1], truths[1]) == pytest.approx(2 / 10)
    pairs = match(preds, truths, word_match, INTERVENTION)
    # The tap prediction overlaps the lamp interval too, but names another object.
    assert [(q.pred, q.truth) for q in pairs] == [(0, 0), (1, 1)]
    m = summarize(pairs, 3, 3, INTERVENTION)
    assert m["miou"] == pytest.approx(100 * (8 / 12 + 0.2 + 0) / 3)
    assert m["iou_at"] == pytest.approx({"0.3": 100 / 3, "0.5": 100 / 3, "0.7": 0.0})
    assert m["start_at"]["1"] == 50.0 and m["start_at"]["2"] == 100.0
    assert m["f1"] == pytest.approx(200 / 3)


def test_touching_intervals_do_not_overlap() -> None:
    assert match([Span(20, 25, "tap")], [Span(10, 20, "tap")], word_match, INTERVENTION) == []


def test_silence_scores_zero_not_undefined() -> None:
    m = summarize([], 0, 4, INTERVENTION)
    assert m["start_at"]["0.2"] == 0.0 and m["f1"] == 0.0 and m["miou"] == 0.0
    assert m["abs_error_s"] is None and m["abs_error_sd_s"] is None


def _blind_rows(names: list[str], events: list[tuple[str, float, float]], end_s: int) -> list[dict]:
    """A clip's recorded intervention steps: five trackers at t = 0, then silence."""
    import json

    gt = json.dumps(
        [{"event_id": f"e{k}", "object": o, "start_s": s, "end_s": e}
         for k, (o, s, e) in enumerate(events)]
    )  # fmt: skip
    rows = []
    for k in range(end_s):
        calls = (
            [{"name": "start_state_tracking", "arguments": {"name": n, "state": "on"}}
             for n in names]
            if k == 0 else []
        )  # fmt: skip
        rows.append({
            "role": "step", "level": INTERVENTION, "trajectory_id": "c1", "task": "ST",
            "step_index": k, "time_ms": 1000 * k, "clip_end_s": float(end_s), "ground_truth": gt,
            "raw_output": json.dumps({"message": None, "tool_calls": calls}),
        })  # fmt: skip
    return rows


def test_blind_trackers_match_nothing() -> None:
    """Section 5.1 gates both levels on the start window: five trackers opened at t = 0 and
    never closed overlap every event, and overlap alone scored them recall 100, F1 75."""
    names = ["tap", "lamp", "stove", "fan", "kettle"]
    events = [("tap", 10.0, 20.0), ("lamp", 25.0, 31.0), ("stove", 40.0, 55.0)]
    out = score_levels(_blind_rows(names, events, 60))[INTERVENTION]
    assert out["predictions"] == 5 and out["ground_truth"] == 3
    assert out["matched"] == 0
    assert out["recall"] == 0.0 and out["f1"] == 0.0 and out["miou"] == 0.0
    # The same trackers opened within the window of each event do match.
    assert match([Span(11, 60, "tap")], [Span(10, 20, "tap")], word_match, INTERVENTION)
    # An interval that overlaps but started 6 s late (window +5 s) does not.
    assert match([Span(16, 20, "tap")], [Span(10, 20, "tap")], word_match, INTERVENTION) == []
