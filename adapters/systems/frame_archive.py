"""`frame-archive`: raw video as memory; keeps and exports every frame, replays them at query time.

At a query it perceives up to `BUDGET` frames sampled uniformly over the
whole archive (the paper samples up to 1,024 frames at 1 FPS), always with
the most recent frames, so its cost grows with the history it holds.

What it keeps is video: every received frame as a JPEG (frames sent as RGB24
are JPEG-encoded on arrival), and its exported state is a Matroska file with
one Motion-JPEG stream holding those JPEGs unchanged, timestamped on the
trajectory clock, playable by any video player. Motion-JPEG rather than a
re-encode to H.264: an import must give back exactly the frames the system
saw, and an inter-frame codec would change them. The paper's "Raw Video as
Memory" keeps the original recordings (APM-Bench, arXiv 2609.37559, B.4:
2,316 MiB mean trajectory peak); this archive holds only what the harness
sent (1 FPS, 448 px), so its Storage/hr is far smaller.
"""

from __future__ import annotations

import io
import json
from fractions import Fraction
from typing import Any

from apmbench.adapters.perception.events import Observation, derive_events, last_seen
from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    FrameEncoding,
    InvalidArgument,
    Query,
    UserTurn,
    UserTurnKind,
)
from apmbench.adapters.systems.answering import Knowledge
from apmbench.adapters.systems.perceiving import PerceivingSystem, SessionMemorySystem, perceive

BUDGET = 1024
RECENT = 4
CONTENT_TYPE = "video/x-matroska"
JPEG_QUALITY = 90
_TAG = "APMBENCH_ARCHIVE"
_MS = Fraction(1, 1000)


class ArchiveMemory(SessionMemorySystem):
    """The raw-video memory policy: every frame and every registration, by session.

    Shared by `frame-archive` and `vlm-video-memory` (the same memory in front
    of a model); the subclass decides how to use it at query time.
    """

    name: str

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.frames: list[tuple[int, Frame]] = []  # (session index, frame)
        self.registrations: list[tuple[int, str]] = []  # (session index, text)
        super().__init__(*args, **kwargs)

    def forget(self) -> None:
        self.frames = []
        self.registrations = []

    def ingest_frame(self, frame: Frame) -> None:
        self.frames.append((self.session_index, as_jpeg(frame)))

    def ingest_user_turn(self, turn: UserTurn) -> None:
        super().ingest_user_turn(turn)
        if turn.kind is UserTurnKind.REGISTRATION:
            self.registrations.append((self.session_index, turn.text))

    def earlier_registrations(self) -> list[str]:
        return [text for s, text in self.registrations if s < self.session_index]

    def export_state(self) -> ExportedState:
        data = encode_archive(self.frames, self.registrations, self.session_index + 1)
        return ExportedState(data, CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        self.frames, self.registrations, sessions = decode_archive(state, self.name)
        self.session_index = sessions - 1
        self.turns = []


class FrameArchive(ArchiveMemory, PerceivingSystem):
    name = "frame-archive"

    def memory_kind(self) -> str:
        return (
            f"every frame (JPEG, exported as Motion-JPEG video); up to {BUDGET} replayed per query"
        )

    def _sample(self) -> list[tuple[int, Frame]]:
        return [self.frames[i] for i in sample_indices(len(self.frames), BUDGET, RECENT)]

    def knowledge(self, query: Query) -> Knowledge:
        seen: list[Observation] = [perceive(f, s) for s, f in self._sample()]
        return Knowledge(
            session_index=self.session_index,
            events=derive_events(seen),
            latest=seen[-1].scene
            if seen and seen[-1].session_index == self.session_index
            else None,
            locations=last_seen(seen),
            turns=list(self.turns),
            registrations=self.earlier_registrations(),
        )


# The policy's parts, shared with `vlm-video-memory` (the same memory in front of a model).


def sample_indices(n: int, budget: int, recent: int = RECENT) -> list[int]:
    """Up to `budget` of `n` indices spread uniformly, always with the `recent` last ones."""
    if n <= budget:
        return list(range(n))
    step = (n - recent) / (budget - recent)
    return sorted({int(i * step) for i in range(budget - recent)} | set(range(n - recent, n)))


def as_jpeg(frame: Frame) -> Frame:
    """The frame as a JPEG: as received, or encoded once when it came as RGB24."""
    if frame.encoding is FrameEncoding.JPEG:
        return frame
    import simplejpeg

    data: bytes = simplejpeg.encode_jpeg(frame.rgb(), quality=JPEG_QUALITY, colorspace="RGB")
    return Frame(frame.time_ms, FrameEncoding.JPEG, frame.width, frame.height, data)


def _runs(values: list[Any]) -> list[list[Any]]:
    """Run-length form [[value, count], ...]: a long archive has few sessions and sizes."""
    out: list[list[Any]] = []
    for v in values:
        if out and out[-1][0] == v:
            out[-1][1] += 1
        else:
            out.append([v, 1])
    return out


def _unruns(runs: list[list[Any]]) -> list[Any]:
    return [v for v, n in runs for _ in range(int(n))]


def encode_archive(
    frames: list[tuple[int, Frame]], registrations: list[tuple[int, str]], sessions: int
) -> bytes:
    """A Matroska file: the JPEGs as a Motion-JPEG stream, pts = trajectory time in ms.

    Which session each frame belongs to, the frame sizes and the reminder
    registrations are a container tag. Byte-identical for the same memory
    (the muxer runs bit-exact: no random ids, no version strings).
    """
    import av

    header = {
        "sessions": sessions,
        "frame_sessions": _runs([s for s, _ in frames]),
        "frame_sizes": _runs([[f.width, f.height] for _, f in frames]),
        "registrations": registrations,
    }
    if not frames:
        # FFmpeg cannot read back a Matroska file without a packet: a memory that has seen
        # no frame yet (a session played empty) is its tag alone.
        return json.dumps(header, separators=(",", ":")).encode()
    buf = io.BytesIO()
    with av.open(buf, "w", format="matroska", container_options={"fflags": "+bitexact"}) as out:
        out.metadata[_TAG] = json.dumps(header, separators=(",", ":"))
        stream = out.add_stream("mjpeg", rate=1)
        stream.width, stream.height = (
            (frames[0][1].width, frames[0][1].height) if frames else (2, 2)
        )
        stream.pix_fmt = "yuvj420p"
        stream.time_base = _MS
        for _, f in frames:
            packet = av.Packet(f.data)
            packet.stream = stream
            packet.pts = packet.dts = f.time_ms
            packet.time_base = _MS
            packet.is_keyframe = True
            out.mux(packet)
    return buf.getvalue()


def decode_archive(
    state: ExportedState, system: str
) -> tuple[list[tuple[int, Frame]], list[tuple[int, str]], int]:
    """(frames, registrations, sessions) of an `encode_archive` state."""
    import av

    if state.content_type != CONTENT_TYPE:
        raise InvalidArgument(f"{system} imports {CONTENT_TYPE}, got {state.content_type}")
    if state.data.startswith(b"{"):  # no frame yet (`encode_archive`); Matroska starts 0x1A
        try:
            empty = json.loads(state.data)
            if empty["frame_sessions"] or empty["frame_sizes"]:
                raise ValueError("frames listed but none stored")
            return [], [(int(t), str(x)) for t, x in empty["registrations"]], int(empty["sessions"])
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidArgument(f"{system} state is not its empty archive: {e}") from e
    try:
        with av.open(io.BytesIO(state.data), "r", format="matroska") as container:
            header = json.loads(container.metadata[_TAG])
            packets = [
                (int(p.pts), bytes(p))
                for p in container.demux(video=0)
                if p.size and p.pts is not None
            ]
    except (av.error.FFmpegError, KeyError, ValueError) as e:
        raise InvalidArgument(f"{system} state is not its Matroska archive: {e}") from e
    sessions_of = _unruns(header["frame_sessions"])
    sizes = _unruns(header["frame_sizes"])
    if not len(sessions_of) == len(sizes) == len(packets):
        raise InvalidArgument(f"{system} state is truncated: {len(packets)} frames of {len(sizes)}")
    frames = [
        (int(s), Frame(t, FrameEncoding.JPEG, int(w), int(h), data))
        for s, (w, h), (t, data) in zip(sessions_of, sizes, packets, strict=True)
    ]
    registrations = [(int(s), str(text)) for s, text in header["registrations"]]
    return frames, registrations, int(header["sessions"])
