"""`frame-archive`: raw video as memory; keeps and exports every frame, replays them at query time.

At a query it perceives up to `BUDGET` frames sampled uniformly over the
whole archive (the paper samples up to 1,024 frames at 1 FPS), always with
the most recent frames, so its cost grows with the history it holds.
"""

from __future__ import annotations

import json
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
CONTENT_TYPE = "application/x-apmbench-frame-archive"
MAGIC = b"APMBENCH-FRAME-ARCHIVE 1\n"


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
        self.frames.append((self.session_index, frame))

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
        return f"every frame (JPEG); up to {BUDGET} replayed per query"

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


def encode_archive(
    frames: list[tuple[int, Frame]], registrations: list[tuple[int, str]], sessions: int
) -> bytes:
    """Every frame as received, after a one-line JSON index; byte-identical for the same memory."""
    index = [[s, f.time_ms, f.encoding.value, f.width, f.height, len(f.data)] for s, f in frames]
    header = {"sessions": sessions, "frames": index, "registrations": registrations}
    body = b"".join(f.data for _, f in frames)
    return MAGIC + json.dumps(header, separators=(",", ":")).encode() + b"\n" + body


def decode_archive(
    state: ExportedState, system: str
) -> tuple[list[tuple[int, Frame]], list[tuple[int, str]], int]:
    """(frames, registrations, sessions) of an `encode_archive` state."""
    if state.content_type != CONTENT_TYPE or not state.data.startswith(MAGIC):
        raise InvalidArgument(f"{system} imports {CONTENT_TYPE}, got {state.content_type}")
    rest = state.data[len(MAGIC) :]
    line, _, body = rest.partition(b"\n")
    header = json.loads(line)
    frames: list[tuple[int, Frame]] = []
    offset = 0
    for s, t, encoding, w, h, size in header["frames"]:
        frames.append((s, Frame(t, FrameEncoding(encoding), w, h, body[offset : offset + size])))
        offset += size
    if offset != len(body):
        raise InvalidArgument(f"{system} state is truncated or has trailing bytes")
    registrations = [(int(s), str(text)) for s, text in header["registrations"]]
    return frames, registrations, int(header["sessions"])
