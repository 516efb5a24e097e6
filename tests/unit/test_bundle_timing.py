"""verify's timing rule on single answers: what the harness's clock cannot have measured."""

from __future__ import annotations

import pytest

from apmbench.harness.orchestrate.bundle.timing import (
    MAX_CHUNKS_PER_S,
    MIN_LATENCY_S,
    answer_flags,
    check_timings,
)


def answer(**changes: object) -> dict[str, object]:
    """An honest answer as the harness records it: one chunk after 0.4 ms."""
    row: dict[str, object] = {
        "instance_id": "T001-ACR-004",
        "segment": "main",
        "raw_output": '{"answer": "B"}',
        "chunks": 1,
        "ttft_s": 0.0004,
        "time_to_answer_s": 0.0004,
        "total_s": 0.0005,
    }
    row.update(changes)
    return row


def test_an_honest_answer_is_not_flagged() -> None:
    assert answer_flags(answer()) == []
    # Streamed in 15 chunks over 10 ms, answered by the 9th: plausible.
    assert answer_flags(answer(chunks=15, time_to_answer_s=0.006, total_s=0.0104)) == []
    # No output at all: no chunk, no first token.
    assert answer_flags(answer(raw_output="", chunks=0, ttft_s=None, time_to_answer_s=None)) == []


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"ttft_s": -0.001}, "ttft_s -0.001 s is not positive"),
        ({"total_s": 0.0}, "total_s 0 s is not positive"),
        ({"ttft_s": 1e-5, "time_to_answer_s": 1e-5, "total_s": 1e-5}, "shorter than a gRPC"),
        ({"time_to_answer_s": 0.0002}, "time_to_answer_s 0.0002 s is before its first token"),
        ({"total_s": 0.0003, "time_to_answer_s": 0.0003}, "ends before its first token"),
        ({"time_to_answer_s": 0.0009}, "ends before the answer arrived"),
        ({"chunks": 400}, "400 chunks cannot carry 15 characters"),
        ({"chunks": 15, "total_s": 0.000401}, "faster than 1,000,000 chunks per second"),
        ({"ttft_s": None, "time_to_answer_s": None}, "1 chunks but a first-token time of None"),
        ({"ttft_s": "fast"}, "ttft_s 'fast' is not a finite number"),
        ({"total_s": None}, "no total_s"),
    ],
)
def test_an_impossible_timing_is_flagged(changes: dict[str, object], said: str) -> None:
    flags = answer_flags(answer(**changes))
    assert any(said in f for f in flags), flags


def test_the_bounds_are_what_the_flags_say() -> None:
    at_floor = answer(ttft_s=MIN_LATENCY_S, time_to_answer_s=MIN_LATENCY_S, total_s=MIN_LATENCY_S)
    assert answer_flags(at_floor) == []
    below = answer(ttft_s=MIN_LATENCY_S * 0.99, time_to_answer_s=0.0004)
    assert answer_flags(below)
    # 14 chunks after the first at exactly the bound's rate pass; a little faster does not.
    span = 14 / MAX_CHUNKS_PER_S
    honest = answer(chunks=15, total_s=0.0004 + span * 1.01)
    fast = answer(chunks=15, total_s=0.0004 + span * 0.99)
    assert answer_flags(honest) == []
    assert answer_flags(fast)


def test_records_name_each_flagged_answer_and_session() -> None:
    records = [
        {
            "trajectory_id": "T001",
            "instances": [answer(), answer(instance_id="T001-CT-002", ttft_s=1e-5)],
            "sessions": [{"session_id": "S001", "ingest_s": 0.5, "export_s": -1.0}],
        }
    ]
    found = check_timings(records)
    assert (found.answers, found.sessions) == (2, 1)
    assert [f.where for f in found.flags] == ["T001/main/T001-CT-002", "T001/session S001"]
    assert found.fastest_s == pytest.approx(1e-5)


def _live_step(**changes: object) -> dict[str, object]:
    """A ProactEgoMem step of a run played live at 4x, answered 0.7 s after it was due
    (0.5 s of it waiting behind earlier items): it acted 2.8 s of video later, late."""
    step: dict[str, object] = {
        "time_ms": 4000, "lag_s": 0.5, "ttft_s": 0.6, "time_to_answer_s": 0.6, "total_s": 0.7,
        "effective_ms": 6800, "period_ms": 1000, "late": True,
    }  # fmt: skip
    return answer(**{**step, **changes})


def test_a_live_answer_must_agree_with_its_own_timings() -> None:
    assert answer_flags(_live_step(), 4.0) == []
    # A dropped step was never asked: no answer, no time, nothing to flag.
    dropped = {"raw_output": "", "chunks": 0, "total_s": None, "ttft_s": None}
    assert answer_flags(answer(live_dropped=True, **dropped), 4.0) == []
    assert answer_flags(answer(live_dropped=True), 4.0) == ["a dropped question with an answer"]
    # Red team 14 moved a slow system's steps to their due time and cleared `late`:
    # Intervention F1 40.0 -> 100.0, and `verify` passed.
    forged = answer_flags(_live_step(effective_ms=4050, late=False), 4.0)
    assert any("effective_ms 4050 is not its time 4000" in f for f in forged), forged
    cleared = answer_flags(_live_step(late=False), 4.0)
    assert any("late False contradicts acting at 6800 ms" in f for f in cleared), cleared
    assert any("within its latency" in f for f in answer_flags(_live_step(lag_s=0.9), 4.0))
    assert answer_flags(answer(), 4.0) == [
        "a live answer without its lag_s, total_s, time_ms and effective_ms"
    ]
