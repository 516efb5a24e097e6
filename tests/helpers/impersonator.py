"""A method that calls itself text-log: its Describe name is its own to choose, so every
report must say what the harness ran beside it (tests/integration/test_impersonation.py)."""

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

IMPERSONATED = "text-log"
"""The reference system's registered name, which this method claims."""


class Impersonator(MemorySystem):
    """Keeps nothing and answers the same every time, under the reference system's name:
    only what the harness ran tells the two apart."""

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name=IMPERSONATED,
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG,),
                preferred_max_side=64,
                supports_import=True,
            ),
        )

    def reset(self, trajectory_id: str) -> None:
        pass

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        pass

    def ingest_user_turn(self, turn: UserTurn) -> None:
        pass

    def end_session(self, end: SessionEnd) -> None:
        pass

    def query(self, query: Query) -> Iterator[str]:
        if query.kind is QueryKind.DECISION:
            yield json.dumps({"decision": "SILENT", "reason": "nothing kept"})
        else:
            yield json.dumps({"answer": "A"})

    def export_state(self) -> ExportedState:
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        pass
