"""Every frame the producer sends is the video frame at (or last before) its sampling time.

The test videos draw each frame's index in its pixels (helpers.frame_videos),
so the frame sent for time t can be read back and compared with the source
frame of largest pts <= t, whatever the GOP: irregular key frames and scene
cuts, a 29.97 FPS clock, open GOPs with leading B-frames.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from helpers.frame_videos import decode_all, key_times, read_index, write_indexed_video

from apmbench.adapters.sdk.types import Frame, FrameEncoding
from apmbench.harness.errors import VideoError
from apmbench.harness.media import frames
from apmbench.harness.media.frame_index import DecodePlan, DecodeStats, PacketIndex
from apmbench.harness.media.frames import FrameSettings, decode_session, probe_duration_ms
from apmbench.harness.suites.apmbench.dataset import Session, load_dataset

RAW = FrameSettings(fps=1.0, max_side=0, encoding=FrameEncoding.RGB24)
START_MS = 9 * 3600 * 1000  # sessions start mid-morning on the trajectory clock

# Key frames every second for the first 5 s (all a short probe would see), then
# at irregular times; scene cuts add more where x264 detects them.
VGOP_KEYS = [0, 30, 60, 90, 120, 173, 251, 262, 407, 555, 700, 1001]
VGOP_CUTS = [330, 480, 610, 790, 905, 1100]


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("videos")
    out = {
        "vgop": root / "vgop.mp4",
        "ntsc": root / "ntsc.mp4",
        "opengop": root / "opengop.mp4",
        "aligned": root / "aligned.mp4",
    }
    write_indexed_video(
        out["vgop"], rate=30, frames=1200, forced_keys=VGOP_KEYS, scene_cuts=VGOP_CUTS
    )
    write_indexed_video(
        out["ntsc"],
        rate=Fraction(30000, 1001),
        frames=1200,
        options={"g": "30", "keyint_min": "30", "sc_threshold": "0", "preset": "veryfast"},
    )
    write_indexed_video(
        out["opengop"],
        rate=30,
        frames=600,
        scene_cuts=[100, 173, 330, 480],
        options={
            "g": "60",
            "sc_threshold": "40",
            "preset": "veryfast",
            "x264-params": "open-gop=1:bframes=3:b-pyramid=normal",
        },
    )
    # What the synthetic generator writes: a one-second GOP, no B-frames.
    write_indexed_video(
        out["aligned"],
        rate=30,
        frames=600,
        options={"g": "30", "keyint_min": "30", "sc_threshold": "0", "bf": "0"},
    )
    return out


def session_of(video: Path, end_ms: int | None = None) -> Session:
    duration = probe_duration_ms(video)
    return Session(video.stem, "DAY1", START_MS, START_MS + (end_ms or duration), video)


def stale_frames(session: Session, frames: list[Frame]) -> list[str]:
    """Frames not showing the source frame of largest pts <= their time, described."""
    assert session.video is not None
    truth = decode_all(session.video)
    assert [i for _, i in truth] == list(range(len(truth))), "the drawn indices do not read back"
    times = [t for t, _ in truth]
    wrong = []
    for frame in frames:
        at = Fraction(frame.time_ms - session.start_ms, 1000)
        expected = max(bisect_right(times, at) - 1, 0)
        got = read_index(frame.rgb())
        if got != expected:
            wrong.append(
                f"t={float(at):.3f}s: sent frame {got} ({float(times[got]):.3f}s), "
                f"expected {expected} ({float(times[expected]):.3f}s)"
            )
    return wrong


def assert_exact(session: Session, settings: FrameSettings) -> DecodeStats:
    stats = DecodeStats()
    frames = list(decode_session(session, settings, stats=stats))
    step = 1000 / settings.fps
    assert len(frames) == int((session.end_ms - session.start_ms - 1) // step) + 1
    wrong = stale_frames(session, frames)
    assert not wrong, f"{len(wrong)} of {len(frames)} frames are not exact: {wrong[:5]}"
    assert stats.lost == 0
    return stats


@pytest.mark.slow
def test_the_videos_are_what_the_tests_claim(videos: dict[str, Path]) -> None:
    vgop = key_times(videos["vgop"])
    assert vgop[:5] == [0, 1, 2, 3, 4]
    assert any(t.denominator != 1 for t in vgop[5:]), "later key frames must be irregular"
    assert len(vgop) > len(VGOP_KEYS), "x264 scene cuts must add key frames"
    assert key_times(videos["ntsc"])[1] == Fraction(1001, 1000)
    with av.open(str(videos["opengop"])) as container:
        stream = container.streams.video[0]
        packets = [(p.pts or 0, p.is_keyframe) for p in container.demux(stream) if p.size]
    leading = [b < a for (a, key), (b, _) in itertools.pairwise(packets) if key and a > 0]
    assert any(leading), "the open-GOP video must have leading pictures after a key frame"


@pytest.mark.parametrize("fps", [1.0, 2.0, 3.0])
def test_variable_gop_every_frame_is_exact(videos: dict[str, Path], fps: float) -> None:
    stats = assert_exact(session_of(videos["vgop"]), FrameSettings(fps, 0, FrameEncoding.RGB24))
    assert stats.indexed
    if fps == 1.0:
        # Seconds 0-3 sample key frames only: their GOPs skip everything else.
        assert stats.key_only_gops >= 4 and stats.decoded < stats.packets


@pytest.mark.parametrize("fps", [1.0, 30.0])
def test_29_97_fps_every_frame_is_exact(videos: dict[str, Path], fps: float) -> None:
    # At 30 samples/s the sampling times fall 0.1-1 ms before frames of the
    # 29.97 clock: rounding frame times to ms would send a frame early.
    assert_exact(session_of(videos["ntsc"]), FrameSettings(fps, 0, FrameEncoding.RGB24))


@pytest.mark.parametrize("fps", [1.0, 7.0, 30.0])
def test_open_gop_leading_pictures_are_exact(videos: dict[str, Path], fps: float) -> None:
    assert_exact(session_of(videos["opengop"]), FrameSettings(fps, 0, FrameEncoding.RGB24))


def test_key_aligned_video_decodes_key_frames_only(videos: dict[str, Path]) -> None:
    session = session_of(videos["aligned"])
    stats = assert_exact(session, RAW)
    assert stats.full_gops == 0 and stats.decoded == 20 and stats.packets == 600
    # At 2 FPS the half-second samples are not key frames: their GOPs are
    # decoded up to them (frames 0-15 of each), the last GOP's rest is not.
    stats = assert_exact(session, FrameSettings(2.0, 0, FrameEncoding.RGB24))
    assert stats.full_gops == 20 and stats.decoded == 20 * 16


def test_mini_fixture_videos_stay_on_the_fast_path(mini: Path) -> None:
    for trajectory in load_dataset(mini).trajectories:
        for session in trajectory.sessions:
            stats = DecodeStats()
            frames = list(decode_session(session, FrameSettings(), stats=stats))
            assert stats.full_gops == 0 and stats.decoded == len(frames) < stats.packets


def test_a_fork_reads_only_the_start_of_the_video(videos: dict[str, Path]) -> None:
    session = session_of(videos["vgop"])
    until = session.start_ms + 12_000
    stats = DecodeStats()
    frames = list(decode_session(session, RAW, until, stats=stats))
    assert [f.time_ms - session.start_ms for f in frames] == [1000 * k for k in range(13)]
    assert not stale_frames(session, frames)
    assert stats.packets < 600, "the index should stop a GOP or two after the last sample"


def test_a_video_shorter_than_its_session_fails_after_its_last_frame(
    videos: dict[str, Path],
) -> None:
    session = session_of(videos["vgop"], end_ms=45_000)  # the video has 40 s
    sent = []
    with pytest.raises(VideoError, match=r"ends at .* the video is shorter than its session"):
        for frame in decode_session(session, RAW):
            sent.append(frame)
    assert len(sent) == 41  # 0..40 s: the last sample within tolerance of the last frame
    assert not stale_frames(session, sent)


def test_a_frame_the_decoder_never_produces_falls_back_to_a_full_decode(
    videos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken plan that leaves out a sampled packet stands in for a decoder that drops it."""
    real_plan = frames.plan

    def drop_one_target(index: PacketIndex, limits: list[int]) -> DecodePlan | None:
        decoded = real_plan(index, limits)
        assert decoded is not None
        feed = decoded.feed.copy()
        lost = int(np.flatnonzero(index.pts == decoded.targets[5])[0])
        assert not index.key[lost], "drop a frame only a full GOP decode yields"
        feed[lost] = False
        return replace(decoded, feed=feed)

    monkeypatch.setattr(frames, "plan", drop_one_target)
    session = session_of(videos["vgop"])
    # At 3 FPS the missing frame holds up more than PENDING_LIMIT later ones:
    # memory stays bounded, and the fallback starts at the missing sample.
    stats = DecodeStats()
    sent = list(decode_session(session, FrameSettings(3.0, 0, FrameEncoding.RGB24), stats=stats))
    assert stats.lost == 1 and len(sent) == 120
    assert not stale_frames(session, sent)


# -- stale frames against a full decode ---------------------------------------------------


def full_decode(session: Session, settings: FrameSettings) -> Iterator[tuple[int, Any]]:
    """(sampling time, frame) by decoding every frame: the slow, obviously right way."""
    assert session.video is not None
    step = 1000 / settings.fps
    count = int((session.end_ms - session.start_ms - 1) // step) + 1
    times = [session.start_ms + round(k * step) for k in range(count)]
    with av.open(str(session.video)) as container:
        stream = container.streams.video[0]
        assert stream.time_base is not None
        frames = [
            (f.pts * stream.time_base, f) for f in container.decode(stream) if f.pts is not None
        ]
    for t in times:
        at = Fraction(t - session.start_ms, 1000)
        before = [f for pts, f in frames if pts <= at]
        yield t, before[-1] if before else frames[0][1]


def count_stale(session: Session, frames: list[Frame], settings: FrameSettings) -> int:
    reference = list(full_decode(session, settings))
    assert [f.time_ms for f in frames] == [t for t, _ in reference]
    return sum(
        read_index(frame.rgb()) != read_index(ref.to_ndarray(format="rgb24"))
        for frame, (_, ref) in zip(frames, reference, strict=True)
    )


@pytest.mark.parametrize("name", ["vgop", "ntsc", "opengop"])
def test_no_frame_is_stale_against_a_full_decode(videos: dict[str, Path], name: str) -> None:
    session = session_of(videos[name])
    settings = FrameSettings()  # what a run sends: 1 FPS, resized JPEG
    assert count_stale(session, list(decode_session(session, settings)), settings) == 0


def keyframe_probe_producer(session: Session, settings: FrameSettings) -> Iterator[Frame]:
    """The cheater: a producer that trusts the first seconds of key frames to speak for all.

    It decodes key frames only when the first 4 s have one per sample period,
    which the variable-GOP video shows, and rounds frame times to ms.
    """
    assert session.video is not None
    step = 1000 / settings.fps
    count = int((session.end_ms - session.start_ms - 1) // step) + 1
    times = [session.start_ms + round(k * step) for k in range(count)]
    early = [t for t in key_times(session.video) if t <= 4]
    regular = all(b - a == Fraction(1, int(settings.fps)) for a, b in itertools.pairwise(early))
    with av.open(str(session.video)) as container:
        stream = container.streams.video[0]
        if regular:
            stream.codec_context.skip_frame = "NONKEY"
        k, previous = 0, None
        for decoded in container.decode(stream):
            at_ms = session.start_ms + round(decoded.time * 1000)
            while k < len(times) and at_ms > times[k]:
                chosen = previous if previous is not None else decoded
                rgb = chosen.to_ndarray(format="rgb24").tobytes()
                yield Frame(times[k], FrameEncoding.RGB24, chosen.width, chosen.height, rgb)
                k += 1
            previous = decoded
        for t in times[k:]:
            assert previous is not None
            rgb = previous.to_ndarray(format="rgb24").tobytes()
            yield Frame(t, FrameEncoding.RGB24, previous.width, previous.height, rgb)


def test_the_checks_catch_a_producer_that_sends_stale_key_frames(
    videos: dict[str, Path],
) -> None:
    session = session_of(videos["vgop"], end_ms=35_000)
    frames = list(keyframe_probe_producer(session, RAW))
    wrong = stale_frames(session, frames)
    assert len(wrong) > len(frames) // 2, wrong
    assert count_stale(session, frames, RAW) == len(wrong)
