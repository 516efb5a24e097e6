"""Frames produced in worker processes: the same bytes as in the harness, errors raised
again in the harness, and no worker left once the pool is closed."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from apmbench.adapters.sdk.types import Frame
from apmbench.harness.errors import FrameWorkerError, VideoError
from apmbench.harness.media.frame_cache import SessionFrames
from apmbench.harness.media.frame_worker import FrameWorkers
from apmbench.harness.media.frames import FrameSettings, decode_session, frames_at
from apmbench.harness.suites import datasets, get_suite
from apmbench.harness.suites.apmbench.dataset import load_dataset
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.suites.apmbench.synth.writer import build

SETTINGS = FrameSettings()


def _key(frames: list[Frame]) -> list[tuple[int, str, int, int, bytes]]:
    return [(f.time_ms, f.encoding.value, f.width, f.height, f.data) for f in frames]


def _workers_alive(pool: FrameWorkers) -> list[int]:
    return [w.proc.pid for w in pool._all if psutil.pid_exists(w.proc.pid)]


def test_video_and_rendered_sessions_give_the_same_frames_as_in_the_harness(
    mini: Path, tmp_path: Path
) -> None:
    videos = load_dataset(mini).trajectories[0].sessions
    live = replace(PRESETS["tiny"], stored_video=False)  # rendered on the fly, as `paper`
    build(live, 0, tmp_path / "live")
    rendered = datasets.load(get_suite("apmbench"), tmp_path / "live")
    sessions = [*videos[:2], *rendered.trajectories[0].sessions[:2]]
    assert any(s.video for s in sessions) and any(s.render for s in sessions)
    small = dataclasses.replace(SETTINGS, max_side=96)
    with FrameWorkers() as pool:
        for session, settings in itertools.product(sessions, (SETTINGS, small)):
            assert _key(list(pool.produce(session, settings))) == _key(
                list(decode_session(session, settings))
            )
        assert len(pool._all) == 1  # one session at a time: one worker, reused
        pids = _workers_alive(pool)
    assert pids and not any(psutil.pid_exists(pid) for pid in pids)


def test_a_session_that_fails_raises_its_error_in_the_harness_and_the_worker_serves_on(
    mini: Path, tmp_path: Path
) -> None:
    session = load_dataset(mini).trajectories[0].sessions[0]
    missing = dataclasses.replace(session, video=tmp_path / "gone.mp4")
    with FrameWorkers() as pool:
        with pytest.raises(VideoError) as raised:
            list(pool.produce(missing, SETTINGS))
        with pytest.raises(VideoError) as here:
            list(decode_session(missing, SETTINGS))
        assert str(raised.value) == str(here.value)
        assert len(list(pool.produce(session, SETTINGS))) > 0
        assert len(pool._all) == 1


def test_an_abandoned_session_stops_its_worker_and_a_dead_worker_is_named(mini: Path) -> None:
    session = load_dataset(mini).trajectories[0].sessions[0]
    with FrameWorkers() as pool:
        frames = pool.produce(session, SETTINGS)
        next(frames)
        first = pool._all[0].proc
        frames.close()  # a replay that stops reading
        assert first.poll() is not None and pool._all == []
        # At 10 frames a second the session's frames (about 470 KB) are far more than the
        # pipe holds (64 KiB), so the worker is still writing when it is killed. At 1 fps
        # they fit, and a worker ahead of a busy harness had written them all, the end
        # included, before the kill (CI under load: no error to name).
        frames = pool.produce(session, replace(SETTINGS, fps=10))
        next(frames)
        pool._all[0].proc.kill()
        with pytest.raises(FrameWorkerError, match="APMBENCH_FRAME_WORKERS=0"):
            list(frames)
        assert len(list(pool.produce(session, SETTINGS))) > 0  # a new worker


def test_the_frame_cache_reads_the_workers_frames(mini: Path, tmp_path: Path) -> None:
    sessions = list(enumerate(load_dataset(mini).trajectories[0].sessions))
    with FrameWorkers() as pool:
        with SessionFrames(SETTINGS, tmp_path / "spill", produce=pool.produce) as cache:
            cache.prefetch(sessions)
            for index, session in reversed(sessions):
                assert _key(list(cache.frames(index, session))) == _key(
                    list(decode_session(session, SETTINGS))
                )
        pids = _workers_alive(pool)
    assert not any(psutil.pid_exists(pid) for pid in pids)


def test_chosen_times_give_the_frames_of_the_whole_decode(mini: Path, tmp_path: Path) -> None:
    """`frames_at` (a report's thumbnails), in a worker and here: the whole decode's
    frames at those times, for a video and a rendered session, at thumbnail size."""
    video = load_dataset(mini).trajectories[0].sessions[0]
    build(replace(PRESETS["tiny"], stored_video=False), 0, tmp_path / "live")
    rendered = datasets.load(get_suite("apmbench"), tmp_path / "live").trajectories[0].sessions[1]
    small = dataclasses.replace(SETTINGS, max_side=160, jpeg_quality=70)
    with FrameWorkers() as pool:
        for session in (video, rendered):
            whole = list(decode_session(session, small))
            times = [whole[k].time_ms for k in (len(whole) - 1, 0, len(whole) // 2)]
            expected = _key([f for f in whole if f.time_ms in times])
            assert len(expected) == 3
            assert _key(list(frames_at(session, small, times))) == expected
            assert _key(list(pool.produce(session, small, times))) == expected
