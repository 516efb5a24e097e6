"""`null`: the system that does nothing, to measure the harness itself.

Like MLPerf's null SUT: it answers a fixed option, always stays SILENT, and
exports a tiny state (counts of what it saw), so every byte of overhead in a
run against it belongs to the harness and the transport.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from apmbench.adapters.sdk import (
    AnswerFormat,
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
)

CONTENT_TYPE = "application/x-apmbench-null+json"


class NullSystem(MemorySystem):
    def __init__(self) -> None:
        self.counts = {"frames": 0, "user_turns": 0, "sessions": 0}

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="null",
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG, FrameEncoding.RGB24),
                preferred_max_side=448,
                supports_import=True,
                streaming_ingest=True,
                # Its counts are all it keeps, in a session or not (R14).
                resumes_sessions=True,
            ),
            details={"answer": "A", "decision": "SILENT"},
        )

    def reset(self, trajectory_id: str) -> None:
        self.counts = {"frames": 0, "user_turns": 0, "sessions": 0}

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        self.counts["frames"] += 1

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.counts["user_turns"] += 1

    def end_session(self, end: SessionEnd) -> None:
        self.counts["sessions"] += 1

    def query(self, query: Query) -> Iterator[str]:
        # R12: answer_format, when set, decides the object; kind only when it is not said.
        if query.answer_format is not None:
            decides = query.answer_format is not AnswerFormat.OPTION
        else:
            decides = query.kind is QueryKind.DECISION
        if decides:
            yield '{"decision":"SILENT","reason":"null system"}'
        else:
            yield '{"answer":"A"}'

    def export_state(self) -> ExportedState:
        data = json.dumps(self.counts, sort_keys=True, separators=(",", ":")).encode()
        return ExportedState(data, CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        if state.content_type != CONTENT_TYPE or state.format_version != 1:
            raise InvalidArgument(
                f"null system imports {CONTENT_TYPE} v1, got {state.content_type} "
                f"v{state.format_version}"
            )
        try:
            counts = json.loads(state.data)
        except ValueError as e:
            raise InvalidArgument(f"null state is not JSON: {e}") from e
        self.counts = {k: int(counts[k]) for k in ("frames", "user_turns", "sessions")}
