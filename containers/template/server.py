"""A minimal memory system for the template: it remembers what the user said.

Replace the method bodies with your system. Only plain types from
`apmbench.adapters.sdk` appear here; the SDK does the gRPC, the health
service, the lifecycle checks and the chunked state transfer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from apmbench.adapters.sdk import (
    Capabilities,
    ExportedState,
    Frame,
    FrameEncoding,
    InvalidArgument,
    MemorySystem,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
    serve,
)

STATE_TYPE = "application/x-my-memory+json"


class MyMemory(MemorySystem):
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.frames = 0

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="my-memory",
            version="0.1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG,),
                preferred_max_side=448,
                supports_import=True,
            ),
        )

    def reset(self, trajectory_id: str) -> None:
        self.notes, self.frames = [], 0

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        self.frames += 1  # frame.rgb() gives the pixels as an (H, W, 3) uint8 array

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.notes.append(turn.text)

    def end_session(self, end: SessionEnd) -> None:
        pass

    def query(self, query: Query) -> Iterator[str]:
        # Read-only: a query must not change what export_state returns.
        if query.kind is QueryKind.DECISION:
            yield json.dumps({"decision": "SILENT", "reason": f"{len(self.notes)} notes, none due"})
        else:
            yield json.dumps({"answer": "A"})

    def export_state(self) -> ExportedState:
        # The complete persistent memory, byte-identical for the same memory.
        data = json.dumps({"notes": self.notes, "frames": self.frames}, sort_keys=True)
        return ExportedState(data.encode(), STATE_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        if state.content_type != STATE_TYPE:
            raise InvalidArgument(f"expected {STATE_TYPE}, got {state.content_type}")
        memory = json.loads(state.data)
        self.notes, self.frames = list(memory["notes"]), int(memory["frames"])


if __name__ == "__main__":
    serve(MyMemory(), os.environ.get("APMBENCH_ADDRESS", "unix:/run/apmbench/sock"))
