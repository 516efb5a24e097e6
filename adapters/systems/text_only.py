"""`text-only`: never looks at a frame; answers from the question and options alone.

The shortcut check of the paper's construction pipeline: if this scores
above chance, the options give the answer away. It picks the option sharing
the most words with the question (ties broken by a hash, so the choice is
deterministic and spread evenly), and always stays SILENT.
"""

from __future__ import annotations

import hashlib
import json
import re
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

CONTENT_TYPE = "application/x-apmbench-empty"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class TextOnly(MemorySystem):
    def describe(self) -> SystemInfo:
        return SystemInfo(
            "text-only",
            "1",
            # Nothing kept, in a session or not: a state exported open resumes it (R14).
            Capabilities(
                frame_encodings=(FrameEncoding.JPEG,),
                preferred_max_side=64,
                resumes_sessions=True,
            ),
            details={"memory": "none; ignores every frame"},
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
            yield json.dumps({"decision": "SILENT", "reason": "I cannot see anything."})
            return
        words = _words(query.question)

        def score(option: str, text: str) -> tuple[int, int]:
            tie = hashlib.sha256(f"{query.question}|{option}".encode()).digest()[0]
            return len(words & _words(text)), tie

        content = [c for c in query.choices if c.option_id != "E"]
        best = max(content, key=lambda c: score(c.option_id, c.text))
        yield json.dumps({"answer": best.option_id})

    def export_state(self) -> ExportedState:
        return ExportedState(b"", CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        pass
