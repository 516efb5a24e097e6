"""Each session's frames are produced once per trajectory run and reused by every replay."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path

import pytest

from apmbench.adapters.sdk.types import Frame
from apmbench.harness.errors import VideoError
from apmbench.harness.media import frames as frames_module
from apmbench.harness.media.frame_cache import SessionFrames
from apmbench.harness.media.frames import FrameSettings, decode_session
from apmbench.harness.media.timeline import Session
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, play, resolve, start
from apmbench.harness.run.executor import Persistence
from apmbench.harness.run.progress_log import Progress
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench.dataset import load_dataset

SETTINGS = FrameSettings()


def _key(frames: list[Frame]) -> list[tuple[int, int, int, bytes]]:
    return [(f.time_ms, f.width, f.height, f.data) for f in frames]


def test_cached_frames_equal_a_fresh_decode_in_memory_and_spilled(
    mini: Path, tmp_path: Path
) -> None:
    session = load_dataset(mini).trajectories[0].sessions[1]
    whole = list(decode_session(session, SETTINGS))
    cut = whole[len(whole) // 2].time_ms
    prefix = list(decode_session(session, SETTINGS, until_ms=cut))
    # 0 bytes of memory: every frame goes to the spill file and is read back from it.
    for budget in (1 << 30, 0):
        spill = tmp_path / f"spill-{budget}"
        with SessionFrames(SETTINGS, spill, memory_bytes=budget) as cache:
            assert _key(list(cache.frames(1, session, cut))) == _key(prefix)
            assert _key(list(cache.frames(1, session))) == _key(whole)
            assert _key(list(cache.frames(1, session, cut))) == _key(prefix)
            assert cache.productions == 1
            assert (spill / "session-1.frames").exists() == (budget == 0)
            assert cache.held_bytes <= budget
        assert not (spill / "session-1.frames").exists(), "the spill file outlives the run"


def test_a_decode_error_reaches_every_replay(tmp_path: Path) -> None:
    broken = Session("S1", "D1", 0, 10_000, video=tmp_path / "missing.mp4")
    with SessionFrames(SETTINGS, tmp_path / "spill") as cache:
        for _ in range(2):
            with pytest.raises(VideoError, match=r"missing\.mp4"):
                list(cache.frames(0, broken))


def test_a_trajectory_run_produces_each_session_once(
    mini: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    produced: collections.Counter[str] = collections.Counter()
    decode = frames_module.decode_session

    def counting(session: Session, settings: FrameSettings, *args: object) -> Iterator[Frame]:
        produced[session.session_id] += 1
        return decode(session, settings, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(frames_module, "decode_session", counting)
    opts = EvaluateOptions(
        dataset=mini,
        out=tmp_path / "run",
        runtime=runtime_spec(system="null", sandbox=False),
        persistence=Persistence.RESET,
    )
    with start(resolve(opts)) as p:
        trajectory = p.dataset.trajectories[0]
        segments = p.suite.plan(p.dataset, trajectory, p.info.capabilities.supports_import)
        replays = collections.Counter(
            trajectory.sessions[i].session_id
            for s in segments
            for i in range(s.first_session, s.last_session + 1)
        )
        assert max(replays.values()) > 1, "the fixture no longer replays any session"
        record = play(p, trajectory, Progress())
    assert record["instances"]
    assert produced == collections.Counter({s.session_id: 1 for s in trajectory.sessions})
