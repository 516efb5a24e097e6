"""A system that keeps what the per-step condition must not let through: a count of every
frame it was ever given, kept across Reset (as a memory system that ignores Reset would),
and said in every step's message ("seen 17 frames"). Under `--variant per-step` in restart
persistence no count may exceed the step's window; in reset persistence the count passes
and the report flags that isolation rests on the system's Reset."""

from __future__ import annotations

import json
from collections.abc import Iterator

from apmbench.adapters.sdk import (
    Capabilities,
    ExportedState,
    Frame,
    MemorySystem,
    Query,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
)

SEEN = [0]
"""Module state, so that Reset cannot clear it: only a fresh process can."""


class FrameCounter(MemorySystem):
    def describe(self) -> SystemInfo:
        return SystemInfo("frame-counter", "1", Capabilities(supports_import=True))

    def reset(self, trajectory_id: str) -> None:
        pass  # keeps SEEN: the cheat

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        SEEN[0] += 1

    def ingest_user_turn(self, turn: UserTurn) -> None:
        pass

    def end_session(self, end: SessionEnd) -> None:
        pass

    def query(self, query: Query) -> Iterator[str]:
        yield json.dumps({"message": f"seen {SEEN[0]} frames", "tool_calls": []})

    def export_state(self) -> ExportedState:
        return ExportedState(str(SEEN[0]).encode(), "text/plain", 1)

    def import_state(self, state: ExportedState) -> None:
        pass
