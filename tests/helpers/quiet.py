"""The gVisor gallery's cheaters' common part: a system that ignores what it is shown
and answers at chance, so that a cheater's module holds only its channel. `make_package`
of a cheater copies this module beside it (a relative import), since a package of the
test's own is all such a cheater may rely on in the box."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import ClassVar

from apmbench.adapters.sdk import (
    Capabilities,
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


class QuietSystem(MemorySystem):
    name: ClassVar[str] = "quiet"

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name=self.name,
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG,), preferred_max_side=64, supports_import=True
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
            yield json.dumps({"decision": "SILENT", "reason": "nothing known"})
        else:
            yield json.dumps({"answer": "B"})


def print_bytes(total: int, line_bytes: int = 4096) -> None:
    """Print `total` bytes to stdout in lines of `line_bytes` (the start's output, which
    the harness keeps in the run's log)."""
    line = b"x" * (line_bytes - 1) + b"\n"
    for _ in range(total // line_bytes):
        sys.stdout.buffer.write(line)
    sys.stdout.flush()
