"""The live feed offers items on the clock, drops the oldest waiting frames past its
buffer, never drops a turn or a one-off question, drops a periodic question for a newer
one, and measures how late it offered each item."""

from __future__ import annotations

import time

import pytest

from apmbench.adapters.sdk.types import (
    Frame,
    FrameEncoding,
    Query,
    QueryKind,
    UserTurn,
    UserTurnKind,
)
from apmbench.harness.errors import ConfigError
from apmbench.harness.run.live import LiveFeed, LiveSettings, pacing_stats, summarize
from apmbench.harness.run.plan import Ask


def _frame(ms: int) -> Frame:
    return Frame(time_ms=ms, encoding=FrameEncoding.JPEG, width=1, height=1, data=b"x")


def _ask(ms: int, periodic: bool = False) -> Ask:
    query = Query(f"q{ms}", ms, QueryKind.DECISION, "", "")
    return Ask(f"i{ms}", 0, ms, query, {}, period_ms=100 if periodic else None)


def _drain(feed: LiveFeed, busy_s: float = 0.0) -> list[object]:
    got: list[object] = []
    while (taken := feed.take()) is not None:
        got += taken
        time.sleep(busy_s)
    return got


def test_a_consumer_whose_buffer_holds_the_feed_gets_every_item_never_early() -> None:
    items = [_frame(ms) for ms in range(0, 1000, 50)]  # 20 frames, 1 s of video at 20 fps
    # The buffer holds all 20: however late a loaded machine schedules this thread, no
    # frame can be dropped (a test of "keeps up" with a small buffer asserted on the
    # scheduler, and failed beside other work; dropping is the next test's, by design).
    with LiveFeed(iter(items), LiveSettings(speed=4.0), max_waiting_frames=len(items)) as feed:
        started = time.monotonic()
        got = _drain(feed)
        took = time.monotonic() - started
    assert got == items
    assert feed.dropped_frames == 0 and feed.offered_frames == 20
    # 950 ms of video at 4x: the last frame is due 0.2375 s after the start, not before.
    assert took >= 0.23
    # One lateness per item, never negative (an item is offered at its time or after);
    # how small it is is make bench's to measure, not a test's on a shared machine.
    assert len(feed.errors_ms) == 20 and min(feed.errors_ms) >= 0


def test_a_busy_consumer_loses_the_oldest_frames_never_a_turn_or_a_question() -> None:
    turn = UserTurn(time_ms=300, kind=UserTurnKind.REGISTRATION, text="keys on the table")
    items: list[object] = [_frame(ms) for ms in range(0, 600, 20)]
    items.insert(16, turn)
    items.append(_ask(600))
    items += [_frame(ms) for ms in range(620, 800, 20)]
    settings = LiveSettings(speed=2.0)
    with LiveFeed(iter(items), settings, max_waiting_frames=2) as feed:  # type: ignore[arg-type]
        got = _drain(feed, busy_s=0.12)
    frames = [x for x in got if isinstance(x, Frame)]
    assert turn in got and any(isinstance(x, Ask) for x in got)
    assert feed.dropped_frames > 0
    assert len(frames) + feed.dropped_frames == feed.offered_frames == 39
    # What was kept is in time order, and the newest frame before the end survives.
    assert [f.time_ms for f in frames] == sorted(f.time_ms for f in frames)
    assert frames[-1].time_ms == 780


def test_a_periodic_question_still_waiting_is_dropped_for_the_next() -> None:
    items: list[object] = []
    for second in range(6):
        items += [_frame(second * 100), _ask(second * 100, periodic=True)]
    with LiveFeed(iter(items), LiveSettings(speed=1.0), max_waiting_frames=10) as feed:  # type: ignore[arg-type]
        got: list[object] = []
        while (taken := feed.take()) is not None:
            got += taken
            if isinstance(taken[-1], Ask):
                time.sleep(0.25)  # answering takes 2.5 steps
    asked = [x.time_ms for x in got if isinstance(x, Ask)]
    dropped = [a.time_ms for a in feed.dropped_asks]
    assert sorted(asked + dropped) == [0, 100, 200, 300, 400, 500]
    assert dropped and asked[-1] == 500


def test_one_off_questions_are_never_dropped() -> None:
    items: list[object] = [_ask(ms) for ms in range(0, 500, 100)]
    with LiveFeed(iter(items), LiveSettings(speed=1.0), max_waiting_frames=1) as feed:  # type: ignore[arg-type]
        got = _drain(feed, busy_s=0.2)
    assert [x.time_ms for x in got] == [0, 100, 200, 300, 400]  # type: ignore[attr-defined]
    assert feed.dropped_asks == []


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="--speed"):
        LiveSettings(speed=0)
    with pytest.raises(ConfigError, match="--live-buffer"):
        LiveSettings(buffer_s=-1)
    assert LiveSettings(buffer_s=1.0).max_waiting_frames(30) == 30
    assert LiveSettings(buffer_s=0.0).max_waiting_frames(1) == 1


def test_the_summary_pools_sessions_and_questions() -> None:
    assert summarize([], []) is None
    pacing = pacing_stats([0.1, 0.2, 5.0])
    assert pacing["p50_ms"] == 0.2 and pacing["max_ms"] == 5.0
    sessions = [
        {
            "segment": "main",
            "session_index": i,
            "speed": 4.0,
            "frames_offered": 10,
            "frames_dropped": d,
            "questions_dropped": 0,
            "wall_s": 2.5,
            "achieved_fps": 4.0 - d,
            "pacing": pacing,
        }
        for i, d in enumerate((0, 2))
    ]
    rows = [
        {"lag_s": 0.0, "total_s": 0.5},
        {"lag_s": 1.5, "total_s": 2.0, "late": True},
        {"live_dropped": True},
    ]
    live = summarize(sessions, rows)  # type: ignore[arg-type]
    assert live is not None
    assert (live["frames_offered"], live["frames_dropped"]) == (20, 2)
    assert live["frames_dropped_share"] == 0.1
    assert (live["questions_asked"], live["questions_dropped"], live["late"]) == (2, 1, 1)
    assert live["lag_s"]["max"] == 1.5 and live["latency_s"]["mean"] == 1.25
