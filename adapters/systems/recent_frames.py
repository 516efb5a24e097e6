"""`recent-frames`: no persistent memory, only the four most recent frames (SimpleStream)."""

from __future__ import annotations

from collections import deque

from apmbench.adapters.perception.events import derive_events, last_seen
from apmbench.adapters.sdk import ExportedState, Frame, Query, SessionEnd
from apmbench.adapters.systems.answering import Knowledge
from apmbench.adapters.systems.perceiving import PerceivingSystem, perceive

WINDOW = 4
CONTENT_TYPE = "application/x-apmbench-empty"


class RecentFrames(PerceivingSystem):
    name = "recent-frames"

    def __init__(self) -> None:
        super().__init__()
        self.frames: deque[Frame] = deque(maxlen=WINDOW)

    def memory_kind(self) -> str:
        return f"none (last {WINDOW} frames of the session)"

    def forget(self) -> None:
        self.frames.clear()

    def ingest_frame(self, frame: Frame) -> None:
        self.frames.append(frame)

    def end_session(self, end: SessionEnd) -> None:
        super().end_session(end)
        self.frames.clear()

    def knowledge(self, query: Query) -> Knowledge:
        seen = [perceive(f, 0) for f in self.frames]
        return Knowledge(
            session_index=0,
            events=derive_events(seen),
            latest=seen[-1].scene if seen else None,
            locations=last_seen(seen),
            turns=list(self.turns),
        )

    def export_state(self) -> ExportedState:
        return ExportedState(b"", CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        self.reset("")
