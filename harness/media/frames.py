"""The video path: decode a session's video at the protocol frame rate, resize,
encode, and hand frames over from a background producer thread.

Decoding overlaps with the system's work and is kept out of the measured push
time (appendix B.3 excludes decoding). The queue is bounded, so memory stays
flat in video length.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TypeAlias

import av
import av.container
import numpy as np
import numpy.typing as npt
from av.video.reformatter import Interpolation, VideoReformatter

from apmbench.adapters.sdk.clock import format_ms
from apmbench.adapters.sdk.types import Frame, FrameEncoding
from apmbench.harness.errors import VideoError
from apmbench.harness.media import jpeg_rows
from apmbench.harness.media.frame_index import DecodePlan, DecodeStats, plan, pts_limit, read_index
from apmbench.harness.media.patched import Rendered, pixels
from apmbench.harness.media.renderers import renderer_for
from apmbench.harness.media.timeline import Session

# A session may end up to one frame period after the last video frame.
END_TOLERANCE_MS = 1000

RGB: TypeAlias = npt.NDArray[np.uint8]
"""An RGB image, height x width x 3 (decoded, or drawn by a renderer)."""


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


def _encode(frame: av.VideoFrame, time_ms: int, settings: FrameSettings) -> Frame:
    width, height = _target_size(frame.width, frame.height, settings.max_side)
    return _encode_rgb(to_rgb24(frame, width, height), time_ms, settings)


_REFORMATTERS = threading.local()

SCALER = Interpolation.BILINEAR | Interpolation.ACCURATE_RND | Interpolation.BITEXACT
"""swscale's bilinear scaler in its bit-exact mode. Its default SIMD paths give other
pixels on other CPUs (the tiny dataset's frame-archive state came out 2,970 bytes
smaller with FFmpeg held to its C code), so a method would be shown different frames
of the same video on different machines. Bit-exact costs 0.34 against 0.07 ms for a
448 x 336 YUV frame to RGB at the same size, and nothing measurable when it resizes
(1.48 against 1.46 ms from 1920 x 1080 to 448 x 252; best of 5 x 100 here).
`tests/unit/test_frame_determinism.py` checks the pixels with the C code forced."""


def to_rgb24(frame: av.VideoFrame, width: int, height: int) -> RGB:
    """The frame converted (and resized) to RGB, one byte a channel, the same on every
    machine (`SCALER`). Through one reformatter per thread: `to_ndarray(width=,
    height=)` makes a new one per frame, whose scaler set-up cost twice the scaling itself
    (3.1 against 1.1 ms for a 448 px frame to a 160 px thumbnail); the same scaler with
    the same parameters gives the same bytes."""
    reformatter = getattr(_REFORMATTERS, "one", None)
    if reformatter is None:
        reformatter = _REFORMATTERS.one = VideoReformatter()
    converted = reformatter.reformat(frame, width, height, "rgb24", interpolation=SCALER)
    return np.asarray(converted.to_ndarray(), np.uint8)


def _encode_rendered(
    frame: Rendered, time_ms: int, settings: FrameSettings, coder: jpeg_rows.RowCoder
) -> Frame:
    """A rendered frame: PyAV's rgb24-to-rgb24 conversion at the same size is the
    identity (a test checks it on whole sessions), so it is skipped unless the frame must
    be resized; it cost as much as the JPEG encoding. Consecutive rendered frames differ
    in a few rows, which `coder` alone codes again (from a `Patched` frame's band alone,
    without assembling the image)."""
    height, width = frame.shape[:2]
    if _target_size(width, height, settings.max_side) == (width, height):
        if settings.encoding is FrameEncoding.JPEG:
            return Frame(time_ms, settings.encoding, width, height, coder.encode(frame))
        return _encode_rgb(pixels(frame), time_ms, settings, coder)
    width, height = _target_size(width, height, settings.max_side)
    source = av.VideoFrame.from_ndarray(pixels(frame), format="rgb24")
    return _encode_rgb(to_rgb24(source, width, height), time_ms, settings, coder)


def _encode_rgb(
    rgb: RGB, time_ms: int, settings: FrameSettings, coder: jpeg_rows.RowCoder | None = None
) -> Frame:
    height, width = rgb.shape[:2]
    if settings.encoding is FrameEncoding.RGB24:
        data = np.ascontiguousarray(rgb).tobytes()
    elif coder is not None:
        data = coder.encode(rgb)
    else:
        data = jpeg_rows.encode(rgb, settings.jpeg_quality)
    return Frame(time_ms, settings.encoding, width, height, data)


def rendered_frames_at(
    session: Session, settings: FrameSettings, times: Iterable[int]
) -> Iterator[Frame]:
    """The frames `decode_session` gives at `times` (some of the session's sampling times),
    in time order, for a rendered session: a renderer draws each time from the session's
    state at that time, so drawing only these gives the same frames as drawing every frame
    before them (a report's thumbnails want a few frames late in a 13-minute session)."""
    if session.render is None:
        raise VideoError(f"session {session.session_id} is not rendered")
    wanted = sorted(set(times))
    render_frames = renderer_for(session.render)
    coder = jpeg_rows.RowCoder(settings.jpeg_quality)
    for t, rgb in zip(wanted, render_frames(session.render, wanted), strict=True):
        yield _encode_rendered(rgb, t, settings, coder)


def frames_at(session: Session, settings: FrameSettings, times: Iterable[int]) -> Iterator[Frame]:
    """The frames `decode_session` gives at `times` (some of its sampling times), in time
    order: drawn at those times alone for a rendered session, decoded up to the last of
    them for a video (what a report's thumbnails want)."""
    wanted = sorted(set(times))
    if not wanted:
        return
    if session.render is not None:
        yield from rendered_frames_at(session, settings, wanted)
        return
    keep = set(wanted)
    with FrameProducer(session, settings, until_ms=wanted[-1]) as frames:
        for frame in frames:
            if frame.time_ms in keep:
                yield frame


def decode_session(
    session: Session,
    settings: FrameSettings,
    until_ms: int | None = None,
    stats: DecodeStats | None = None,
) -> Iterator[Frame]:
    """Frames of `session` at `settings.fps`, each the latest video frame at or before its time.

    Exact whatever the GOP: which frame each sample shows, and which packets
    must be decoded for it, comes from the packet index (see `frame_index`).
    Stops after `until_ms` when given. Raises `VideoError` for a missing or
    unreadable video and for one that ends before the session does. `stats`,
    when given, records what was decoded.
    """
    times = frame_times(session, settings.fps)
    if until_ms is not None:
        times = [t for t in times if t <= until_ms]
    if not times:
        return
    if session.render is not None:
        render_frames = renderer_for(session.render)
        coder = jpeg_rows.RowCoder(settings.jpeg_quality)
        for t, rgb in zip(times, render_frames(session.render, times), strict=True):
            yield _encode_rendered(rgb, t, settings, coder)
        return
    if session.video is None:
        raise VideoError(f"session {session.session_id} has neither a video nor a render spec")
    stats = stats if stats is not None else DecodeStats()
    video = session.video
    try:
        with _open(session) as container:
            stream = container.streams.video[0]
            if stream.time_base is None:
                raise VideoError(f"{video} does not state a time base for its video stream")
            time_base = Fraction(stream.time_base)
            limits = [pts_limit(t - session.start_ms, time_base) for t in times]
            index = read_index(container, stream, limits[-1])
        decode_plan = plan(index, limits) if index is not None else None
        tolerance = pts_limit(END_TOLERANCE_MS, time_base)

        def send(k: int, chosen: av.VideoFrame, last_pts: int | None) -> Frame:
            pts = chosen.pts
            assert pts is not None, "the samplers hand over only frames with a pts"
            if pts == last_pts and limits[k] - pts > tolerance:
                last_ms = session.start_ms + int(pts * time_base * 1000)
                raise VideoError(
                    f"video {video} ends at {format_ms(last_ms)} but session "
                    f"{session.session_id} runs until {format_ms(session.end_ms)}: the video "
                    "is shorter than its session"
                )
            return _encode(chosen, times[k], settings)

        first = 0
        if decode_plan is not None and index is not None:
            stats.indexed = True
            stats.packets = int(index.pts.size)
            stats.key_only_gops = decode_plan.key_only_gops
            stats.full_gops = decode_plan.full_gops
            target = _TargetSampler(decode_plan)
            try:
                for k, chosen in _run(session, decode_plan, target, stats):
                    yield send(k, chosen, decode_plan.last_pts)
                return
            except _TargetLost:
                # The decoder never produced a frame the index names (a damaged
                # packet, a decoder that drops frames after a gap): decode every
                # packet for the samples not sent yet rather than send a stale frame.
                first = target.k
                stats.lost += 1
        order = _OrderSampler(limits, first, video)
        for k, chosen in _run(session, None, order, stats):
            yield send(k, chosen, order.last_pts)
    except av.error.FFmpegError as e:
        raise VideoError(f"cannot decode {video}: {e}") from e


def _open(session: Session) -> av.container.InputContainer:
    try:
        container = av.open(str(session.video))
    except (OSError, av.error.FFmpegError) as e:
        raise VideoError(
            f"cannot open video {session.video} of session {session.session_id}: {e}"
        ) from e
    if not container.streams.video:
        container.close()
        raise VideoError(f"{session.video} has no video stream")
    return container


def _run(
    session: Session,
    decode_plan: DecodePlan | None,
    sampler: _TargetSampler | _OrderSampler,
    stats: DecodeStats,
) -> Iterator[tuple[int, av.VideoFrame]]:
    """(sample, frame) pairs from decoding the packets `decode_plan` names, or all of them."""
    with _open(session) as container:
        stream = container.streams.video[0]
        if decode_plan is None or decode_plan.full_gops:
            # Frame threads pay off on runs of dependent frames; starting
            # them costs more than it saves on key frames alone.
            stream.thread_type = "AUTO"
        codec = stream.codec_context
        position = -1
        for packet in container.demux(stream):
            if packet.size == 0:
                continue
            position += 1
            if decode_plan is not None:
                if position > decode_plan.last_fed:
                    break
                if not decode_plan.feed[position]:
                    continue
            else:
                stats.packets = max(stats.packets, position + 1)
            stats.decoded += 1
            for decoded in codec.decode(packet):
                yield from sampler.offer(decoded)
            if sampler.done:
                return
        for decoded in codec.decode(None):
            yield from sampler.offer(decoded)
    yield from sampler.finish()


class _TargetLost(Exception):
    pass


class _OrderSampler:
    """Sample k gets the last decoded frame with pts <= its limit, from sample `first` on.

    Relies on the decoder's presentation order, which holds when every packet
    is decoded.
    """

    def __init__(self, limits: list[int], first: int, video: Path) -> None:
        self.limits = limits
        self.video = video
        self.first = first
        self.k = 0
        self.previous: av.VideoFrame | None = None
        self.last_pts: int | None = None
        """Known at the end only: until then no frame is known to be the video's last."""

    @property
    def done(self) -> bool:
        return self.k == len(self.limits)

    def offer(self, decoded: av.VideoFrame) -> Iterator[tuple[int, av.VideoFrame]]:
        if decoded.pts is None:
            return
        while self.k < len(self.limits) and decoded.pts > self.limits[self.k]:
            if self.k >= self.first:
                yield self.k, self.previous if self.previous is not None else decoded
            self.k += 1
        self.previous = decoded

    def finish(self) -> Iterator[tuple[int, av.VideoFrame]]:
        if self.previous is None:
            raise VideoError(f"{self.video} has no decodable frames")
        self.last_pts = self.previous.pts
        for k in range(max(self.k, self.first), len(self.limits)):
            yield k, self.previous


class _TargetSampler:
    """Sample k gets the frame whose pts the plan names, once decoded.

    Frames are matched by pts, not by arrival order: after skipped packets a
    decoder may emit frames out of presentation order. A target still missing
    when `PENDING_LIMIT` later ones have arrived, or at the end, raises
    `_TargetLost`.
    """

    PENDING_LIMIT = 64

    def __init__(self, decode_plan: DecodePlan) -> None:
        self.targets = decode_plan.targets
        self.wanted = set(decode_plan.targets)
        self.k = 0
        self.pending: dict[int, av.VideoFrame] = {}

    @property
    def done(self) -> bool:
        return self.k == len(self.targets)

    def offer(self, decoded: av.VideoFrame) -> Iterator[tuple[int, av.VideoFrame]]:
        if decoded.pts is None or decoded.pts not in self.wanted or self.done:
            return
        if decoded.pts >= self.targets[self.k]:
            self.pending[decoded.pts] = decoded
        while not self.done and self.targets[self.k] in self.pending:
            yield self.k, self.pending[self.targets[self.k]]
            self.k += 1
        if not self.done:
            for pts in [p for p in self.pending if p < self.targets[self.k]]:
                del self.pending[pts]
        if len(self.pending) > self.PENDING_LIMIT:
            raise _TargetLost

    def finish(self) -> Iterator[tuple[int, av.VideoFrame]]:
        if not self.done:
            raise _TargetLost
        yield from ()


class FrameProducer:
    """Decodes in a background thread into a bounded queue; iterate to consume.

    `close()` (or leaving a `with` block) stops the thread early, for forks
    that end before their session does.
    """

    def __init__(
        self,
        session: Session,
        settings: FrameSettings,
        until_ms: int | None = None,
        depth: int = 64,
    ) -> None:
        self._queue: queue.Queue[Frame | BaseException | None] = queue.Queue(maxsize=depth)
        """Frames, then None at the end or the exception that stopped the decoding."""
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(session, settings, until_ms), daemon=True, name="decode"
        )
        self._thread.start()

    def _put(self, item: Frame | BaseException | None) -> bool:
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
        self._put(None)

    def __iter__(self) -> Iterator[Frame]:
        while True:
            item = self._queue.get()
            if item is None:
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
