"""The video path: decode a session's video at the protocol frame rate, resize,
encode, and hand frames over from a background producer thread.

Decoding overlaps with the system's work and is kept out of the measured push
time (appendix B.3 excludes decoding). The queue is bounded, so memory stays
flat in video length.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import numpy as np
import simplejpeg

from apmbench.adapters.sdk.clock import format_ms
from apmbench.adapters.sdk.types import Frame, FrameEncoding
from apmbench.harness.errors import VideoError
from apmbench.harness.media.renderers import renderer_for
from apmbench.harness.media.timeline import Session

# A session may end up to one frame period after the last video frame.
END_TOLERANCE_MS = 1000


@dataclass(frozen=True)
class FrameSettings:
    """How frames are sampled and sent."""

    fps: float = 1.0
    """Frames per second of session time pushed to the system (the paper uses 1)."""
    max_side: int = 448
    """Longest side after resizing; 0 keeps the decoded size. The system's
    preferred size, when it declares one, wins."""
    encoding: FrameEncoding = FrameEncoding.JPEG
    jpeg_quality: int = 90


def frame_times(session: Session, fps: float) -> list[int]:
    """Sampling times of a session on the trajectory clock: start, start + 1/fps, ... < end."""
    step = 1000.0 / fps
    count = int((session.end_ms - session.start_ms - 1) // step) + 1
    return [session.start_ms + round(k * step) for k in range(count)]


def _target_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    if max_side <= 0 or max(width, height) <= max_side:
        return width, height
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _encode(frame: Any, time_ms: int, settings: FrameSettings) -> Frame:
    width, height = _target_size(frame.width, frame.height, settings.max_side)
    rgb = frame.to_ndarray(width=width, height=height, format="rgb24")
    if settings.encoding is FrameEncoding.RGB24:
        data = np.ascontiguousarray(rgb).tobytes()
    else:
        data = simplejpeg.encode_jpeg(rgb, quality=settings.jpeg_quality, colorspace="RGB")
    return Frame(time_ms, settings.encoding, width, height, data)


def decode_session(
    session: Session, settings: FrameSettings, until_ms: int | None = None
) -> Iterator[Frame]:
    """Frames of `session` at `settings.fps`, each the latest video frame at or before its time.

    Stops after `until_ms` when given. Raises `VideoError` for a missing or
    unreadable video and for one that ends before the session does.
    """
    times = frame_times(session, settings.fps)
    if until_ms is not None:
        times = [t for t in times if t <= until_ms]
    if not times:
        return
    if session.render is not None:
        render_frames = renderer_for(session.render)
        for t, rgb in zip(times, render_frames(session.render, times), strict=True):
            yield _encode(av.VideoFrame.from_ndarray(rgb, format="rgb24"), t, settings)
        return
    if session.video is None:
        raise VideoError(f"session {session.session_id} has neither a video nor a render spec")
    try:
        container = av.open(str(session.video))
    except (OSError, av.error.FFmpegError) as e:
        raise VideoError(
            f"cannot open video {session.video} of session {session.session_id}: {e}"
        ) from e
    with container:
        if not container.streams.video:
            raise VideoError(f"{session.video} has no video stream")
        stream = container.streams.video[0]
        if _keyframes_suffice(session.video, settings.fps):
            # Every sampling time falls on a key frame: skip decoding the rest.
            stream.codec_context.skip_frame = "NONKEY"
        else:
            stream.thread_type = "AUTO"
        k = 0
        previous: Any = None
        try:
            for decoded in container.decode(stream):
                if decoded.pts is None:
                    continue
                at_ms = session.start_ms + round(decoded.time * 1000)
                while k < len(times) and at_ms > times[k]:
                    yield _encode(previous if previous is not None else decoded, times[k], settings)
                    k += 1
                if k == len(times):
                    return
                previous = decoded
        except av.error.FFmpegError as e:
            raise VideoError(f"cannot decode {session.video}: {e}") from e
        if previous is None:
            raise VideoError(f"{session.video} has no decodable frames")
        last_ms = session.start_ms + round(previous.time * 1000)
        while k < len(times):
            if times[k] - last_ms > END_TOLERANCE_MS:
                raise VideoError(
                    f"video {session.video} ends at {format_ms(last_ms)} but session "
                    f"{session.session_id} runs until {format_ms(session.end_ms)}: the video is "
                    "shorter than its session"
                )
            yield _encode(previous, times[k], settings)
            k += 1


def _keyframes_suffice(video: Path, fps: float, probe_s: float = 4.0) -> bool:
    """Whether key frames come at least as often as samples, starting at time 0.

    Read from the packets of the first seconds (no decoding). Videos written
    with a one-second GOP (as the synthetic generator and APM-Bench's 1-FPS
    protocol suggest) decode only their key frames.
    """
    period = 1.0 / fps
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        if stream.time_base is None:
            return False
        keys: list[float] = []
        for packet in container.demux(stream):
            if packet.pts is None:
                continue
            at = float(packet.pts * stream.time_base)
            if packet.is_keyframe:
                keys.append(at)
            if at > probe_s:
                break
    if not keys or keys[0] > 1e-3 or len(keys) < 2:
        return False
    gaps = [b - a for a, b in itertools.pairwise(keys)]
    return all(abs(g - period) < 1e-3 for g in gaps)


class FrameProducer:
    """Decodes in a background thread into a bounded queue; iterate to consume.

    `close()` (or leaving a `with` block) stops the thread early, for forks
    that end before their session does.
    """

    _DONE = object()

    def __init__(
        self,
        session: Session,
        settings: FrameSettings,
        until_ms: int | None = None,
        depth: int = 64,
    ) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(session, settings, until_ms), daemon=True, name="decode"
        )
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, session: Session, settings: FrameSettings, until_ms: int | None) -> None:
        try:
            for frame in decode_session(session, settings, until_ms):
                if not self._put(frame):
                    return
        except BaseException as e:  # handed to the consumer, which re-raises it
            self._put(e)
            return
        self._put(self._DONE)

    def __iter__(self) -> Iterator[Frame]:
        while True:
            item = self._queue.get()
            if item is self._DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def __enter__(self) -> FrameProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def probe_duration_ms(video: Path) -> int:
    """Duration of a video's first stream in ms (from the container; no decoding)."""
    try:
        with av.open(str(video)) as container:
            stream = container.streams.video[0]
            if stream.duration is not None and stream.time_base is not None:
                return int(stream.duration * stream.time_base * 1000)
            if container.duration is not None:
                return int(container.duration / 1000)
    except (OSError, IndexError, av.error.FFmpegError) as e:
        raise VideoError(f"cannot read video {video}: {e}") from e
    raise VideoError(f"video {video} does not state its duration")
