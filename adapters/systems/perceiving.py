"""The base of the reference systems that read pixels: one perception backend, one answering step.

Subclasses differ only in what they keep (their memory policy) and in how
they turn it into `Knowledge` at query time.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator

from apmbench.adapters.perception.events import Observation
from apmbench.adapters.perception.reader import read_scene
from apmbench.adapters.sdk import (
    Capabilities,
    Frame,
    FrameEncoding,
    MemorySystem,
    Query,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
)
from apmbench.adapters.systems.answering import Knowledge, answer


def perceive(frame: Frame, session_index: int) -> Observation:
    return Observation(frame.time_ms, session_index, read_scene(frame.rgb()))


class SessionMemorySystem(MemorySystem):
    """Session bookkeeping shared by the reference systems (and the VLM systems): which
    session this is, counted from 0 in the trajectory, and the user's turns in it."""

    def __init__(self) -> None:
        self.session_index = -1
        self.turns: list[UserTurn] = []

    def reset(self, trajectory_id: str) -> None:
        self.session_index = -1
        self.turns = []
        self.forget()

    @abstractmethod
    def forget(self) -> None:
        """Drop the policy's own memory (called by reset)."""

    def start_session(self, start: SessionStart) -> None:
        self.session_index += 1
        self.turns = []

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.turns.append(turn)

    def end_session(self, end: SessionEnd) -> None:
        self.turns = []


class PerceivingSystem(SessionMemorySystem):
    name = ""
    version = "1"

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name=self.name,
            version=self.version,
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG, FrameEncoding.RGB24),
                preferred_max_side=448,
                supports_import=True,
                streaming_ingest=True,
            ),
            details={"perception": "synthetic-scene reader", "memory": self.memory_kind()},
        )

    @abstractmethod
    def memory_kind(self) -> str: ...

    @abstractmethod
    def knowledge(self, query: Query) -> Knowledge: ...

    def query(self, query: Query) -> Iterator[str]:
        yield answer(query, self.knowledge(query))

    @abstractmethod
    def ingest_frame(self, frame: Frame) -> None: ...
