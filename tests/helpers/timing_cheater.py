"""A memory system that never looks at a frame and decides from times alone.

It applies the rule that read the labels off the first synthetic generator's
probe geometry: silence intervals were always 5 s long, an RCR negative came
3 s after its registration, and an ERA fork asked its negative before its
positive. On that generator it scored 100 % decision balanced accuracy; on a
benchmark without shortcuts it stays at chance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from apmbench.adapters.sdk import (
    Capabilities,
    ExportedState,
    Frame,
    FrameEncoding,
    MemorySystem,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
)
from apmbench.adapters.sdk.types import UserTurnKind


class TimingOnlyDecider(MemorySystem):
    def __init__(self) -> None:
        self.registrations: list[int] = []
        self.decisions_asked = 0

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="timing-only-decider",
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG,), preferred_max_side=32, supports_import=True
            ),
        )

    def reset(self, trajectory_id: str) -> None:
        self.registrations, self.decisions_asked = [], 0

    def start_session(self, start: SessionStart) -> None:
        self.registrations, self.decisions_asked = [], 0

    def ingest_frame(self, frame: Frame) -> None:
        pass  # the point: frames are never read

    def ingest_user_turn(self, turn: UserTurn) -> None:
        if turn.kind is UserTurnKind.REGISTRATION:
            self.registrations.append(turn.time_ms)

    def end_session(self, end: SessionEnd) -> None:
        pass

    def decide(self, query: Query) -> bool:
        if query.interval_start_ms:
            return query.time_ms - query.interval_start_ms != 5000
        if self.registrations:
            return query.time_ms - self.registrations[-1] != 3000
        return self.decisions_asked > 0

    def query(self, query: Query) -> Iterator[str]:
        if query.kind is not QueryKind.DECISION:
            yield json.dumps({"answer": "A"})
            return
        intervene = self.decide(query)
        self.decisions_asked += 1
        reply = {"decision": "INTERVENE" if intervene else "SILENT", "reason": "timing"}
        if intervene:
            reply |= {"answer": "A", "proactive_response": "Now."}
        yield json.dumps(reply)

    def export_state(self) -> ExportedState:
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        pass
