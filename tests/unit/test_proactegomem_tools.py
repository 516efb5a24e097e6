"""The tool state the harness owns at ProactEgoMem steps: what is applied, what is an invalid
call, what is silence, and what the next step's context shows."""

from __future__ import annotations

import json
from collections.abc import Mapping

from apmbench.harness.suites.proactegomem.tools import (
    INTERVENTION,
    NOTIFICATION,
    ToolState,
    frame_window,
    replay,
)


def answer(*calls: Mapping[str, object], message: str | None = "why") -> str:
    return json.dumps({"message": message, "tool_calls": list(calls)})


START = {"name": "start_state_tracking", "arguments": {"name": "tap", "state": "on"}}


def stop(iid: str) -> dict[str, object]:
    return {"name": "stop_state_tracking", "arguments": {"id": iid}}


def test_start_then_stop_makes_one_interval_and_the_context_shows_it() -> None:
    s = ToolState("ST", INTERVENTION)
    [started] = s.apply(0, 3.0, answer(START))
    assert started["valid"] and started["instance_id"] == "st-1"
    ctx = s.context(4.0)
    assert ctx["active_tools"] == [
        {"instance_id": "st-1", "tool_name": "start_state_tracking", "started_at_sec": 3.0,
         "arguments": {"name": "tap", "state": "on"}}
    ]  # fmt: skip
    assert ctx["completed_tool_intervals"] == []
    s.apply(1, 7.0, answer(stop("st-1")))
    ctx = s.context(8.0)
    assert ctx["active_tools"] == []
    [done] = ctx["completed_tool_intervals"]
    assert (done["started_at_sec"], done["ended_at_sec"]) == (3.0, 7.0)
    assert done["end_tool_name"] == "stop_state_tracking"


def test_invalid_calls_are_counted_and_change_nothing() -> None:
    s = ToolState("ST", INTERVENTION)
    actions = s.apply(
        0,
        1.0,
        answer(
            {"name": "start_location_tracking", "arguments": {"name": "tap", "location": "x"}},
            stop("st-9"),
            {"name": "start_state_tracking", "arguments": "tap"},
            {"name": "start_state_tracking", "arguments": {"name": "tap"}},
            {"name": "start_state_tracking", "arguments": {"name": "tap", "state": "on"}, "x": 1},
        ),
    )
    assert [a["valid"] for a in actions] == [False] * 5
    assert "unknown tool" in actions[0]["error"] and "not an active" in actions[1]["error"]
    assert s.invalid_calls == 5 and s.active == [] and s.completed == []


def test_unparseable_output_is_silence() -> None:
    s = ToolState("ST", INTERVENTION)
    for text in ("", "sure!", '```json\n{"message": null, "tool_calls": []}\n```', "[1]",
                 '{"message": 3, "tool_calls": []}', '{"message": null, "tool_calls": {}}'):  # fmt: skip
        assert s.apply(0, 1.0, text) == []
    assert s.unparseable == 6 and s.invalid_calls == 0


def test_context_lists_the_five_latest_completed_intervals_and_messages() -> None:
    s = ToolState("ST", INTERVENTION)
    for k in range(7):
        s.apply(2 * k, float(2 * k), answer(START))
        s.apply(2 * k + 1, float(2 * k + 1), answer(stop(f"st-{k + 1}")))
    ids = [r["instance_id"] for r in s.context(20.0)["completed_tool_intervals"]]
    assert ids == ["st-3", "st-4", "st-5", "st-6", "st-7"]
    n = ToolState("ST", NOTIFICATION)
    for k in range(7):
        n.apply(k, float(k), json.dumps({"message": f"You just turned on the tap #{k}"}))
    n.apply(7, 7.0, json.dumps({"message": None}))
    ctx = n.context(8.0)
    assert [m["step_index"] for m in ctx["recent_messages"]] == [2, 3, 4, 5, 6]
    assert set(ctx) == {"current_time_sec", "recent_messages"}


def test_an_open_tracker_ends_with_the_clip_and_replay_is_the_live_state() -> None:
    steps = [(0, 2.0, answer(START)), (1, 3.0, answer()), (2, 4.0, "nonsense")]
    state, actions = replay("ST", INTERVENTION, steps)
    [interval] = state.intervals(40.0)
    assert (interval["started_at_sec"], interval["ended_at_sec"]) == (2.0, 40.0)
    assert state.unparseable == 1 and len(actions) == 1


def test_frame_window_is_the_ten_latest_frames_numbered_from_one() -> None:
    window = frame_window([float(t) for t in range(30)], 14.0).splitlines()
    assert window[0] == "Frame 1: t=5.0s" and window[-1] == "Frame 10: t=14.0s"


def test_ic_keeps_a_single_recording_whose_stop_needs_no_id() -> None:
    s = ToolState("IC", INTERVENTION)
    rec = {"name": "start_recording", "arguments": {"name": "receipt"}}
    stop_rec = {"name": "stop_recording", "arguments": {}}
    [early] = s.apply(0, 1.0, answer(stop_rec))
    assert not early["valid"] and "no recording is active" in early["error"]
    [first, second] = s.apply(1, 2.0, answer(rec, rec))
    assert first["valid"] and not second["valid"] and "already active" in second["error"]
    [nameless] = s.apply(2, 3.0, answer({"name": "start_recording", "arguments": {}}))
    assert not nameless["valid"] and "`name`" in nameless["error"]
    [stopped] = s.apply(3, 5.0, answer(stop_rec))
    assert stopped["valid"] and stopped["instance_id"] == "ic-1"
    [done] = s.intervals(60.0)
    assert (done["started_at_sec"], done["ended_at_sec"]) == (2.0, 5.0)
    assert s.invalid_calls == 3
