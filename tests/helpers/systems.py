"""Memory systems used only by the tests, served by `apmbench-grpc serve helpers.systems:NAME`."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

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


class JsonMemory(MemorySystem):
    """A system whose whole memory is one JSON-able dict, exported canonically."""

    name = "json-memory"
    supports_import = True
    resumes_sessions = False

    def __init__(self) -> None:
        self.memory: dict[str, Any] = self.empty()

    def empty(self) -> dict[str, Any]:
        return {"turns": [], "sessions": [], "frames": 0}

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name=self.name,
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG,),
                preferred_max_side=64,
                supports_import=self.supports_import,
                resumes_sessions=self.resumes_sessions,
            ),
        )

    def reset(self, trajectory_id: str) -> None:
        self.memory = self.empty()

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        self.memory["frames"] += 1

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.memory["turns"].append(turn.text)

    def end_session(self, end: SessionEnd) -> None:
        self.memory["sessions"].append(end.session_id)

    def answer(self, query: Query) -> dict[str, Any]:
        if query.kind is QueryKind.DECISION:
            return {"decision": "SILENT", "reason": "seen"}
        return {"answer": "A"}

    def query(self, query: Query) -> Iterator[str]:
        reply = self.answer(query)
        reply["memory"] = self.memory
        yield json.dumps(reply)

    def export_state(self) -> ExportedState:
        data = json.dumps(self.memory, sort_keys=True).encode()
        return ExportedState(data, "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        self.memory = json.loads(state.data)


class TurnEcho(JsonMemory):
    """Answers with every user turn it remembers: shows which turns reached which query."""

    name = "turn-echo"


class ResumingJsonMemory(JsonMemory):
    """Declares R14: its one dict is all it keeps, in a session or not, and every answer
    shows it (frames counted, turns, sessions), so two paths that answer alike saw alike."""

    name = "resuming-json-memory"
    resumes_sessions = True

    def query(self, query: Query) -> Iterator[str]:
        # Keys in one order whether the dict was built here or imported.
        reply = self.answer(query)
        reply["memory"] = self.memory
        yield json.dumps(reply, sort_keys=True)


class NoImport(JsonMemory):
    """Declares that it cannot import: forks must replay from the start."""

    name = "no-import"
    supports_import = False


# Process-wide memory that is never exported: it survives Reset but not a restart.
_HIDDEN: list[str] = []


class HiddenState(JsonMemory):
    """Keeps a second, unexported memory of session starts (what a cheater would do)."""

    name = "hidden-state"

    def start_session(self, start: SessionStart) -> None:
        _HIDDEN.append(start.session_id)

    def query(self, query: Query) -> Iterator[str]:
        reply = self.answer(query)
        reply["exported_sessions"] = self.memory["sessions"]
        reply["hidden_sessions"] = list(_HIDDEN)
        yield json.dumps(reply)


class Recorder(JsonMemory):
    """Appends everything that reaches it to the JSONL file named by $APMBENCH_RECORD."""

    name = "recorder"

    def __init__(self) -> None:
        super().__init__()
        self._path = os.environ["APMBENCH_RECORD"]

    def _log(self, **event: Any) -> None:
        with open(self._path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event) + "\n")

    def start_session(self, start: SessionStart) -> None:
        self._log(event="start", session=start.session_id, time_ms=start.time_ms)

    def ingest_frame(self, frame: Frame) -> None:
        super().ingest_frame(frame)
        self._log(event="frame", time_ms=frame.time_ms, size=[frame.width, frame.height])

    def ingest_user_turn(self, turn: UserTurn) -> None:
        super().ingest_user_turn(turn)
        self._log(event="turn", time_ms=turn.time_ms, kind=turn.kind.value, text=turn.text)

    def end_session(self, end: SessionEnd) -> None:
        super().end_session(end)
        self._log(event="end", session=end.session_id, time_ms=end.time_ms)

    def query(self, query: Query) -> Iterator[str]:
        self._log(
            event="query",
            time_ms=query.time_ms,
            kind=query.kind.value,
            text=" ".join(
                [query.system_prompt, query.prompt, query.question]
                + [c.text for c in query.choices]
            ),
        )
        yield json.dumps(self.answer(query))


class SlowIngest(JsonMemory):
    """Takes $APMBENCH_INGEST_DELAY seconds per frame, so a run can be killed mid-way."""

    name = "slow-ingest"

    def ingest_frame(self, frame: Frame) -> None:
        time.sleep(float(os.environ.get("APMBENCH_INGEST_DELAY", "0.01")))
        super().ingest_frame(frame)


class BigState(JsonMemory):
    """Exports `size` pseudo-random bytes; imports whatever it is given."""

    name = "big-state"

    def __init__(self, size: int = 70 << 20) -> None:
        super().__init__()
        block = bytes(range(256)) * 4096  # 1 MiB
        self.blob = (block * (size // len(block) + 1))[:size]

    def export_state(self) -> ExportedState:
        return ExportedState(self.blob, "application/octet-stream", 3)

    def import_state(self, state: ExportedState) -> None:
        self.blob = state.data


class Crashing(JsonMemory):
    """Fails in ingest_frame with an unexpected exception."""

    name = "crashing"

    def ingest_frame(self, frame: Frame) -> None:
        raise ZeroDivisionError("boom in method code")


class SlowStream(JsonMemory):
    """Streams its answer slowly; counts how many answers ran to completion."""

    name = "slow-stream"

    def __init__(self) -> None:
        super().__init__()
        self.finished = 0
        self.closed = threading.Event()

    def query(self, query: Query) -> Iterator[str]:
        try:
            for _ in range(50):
                time.sleep(0.05)
                yield "."
            self.finished += 1
        finally:
            self.closed.set()


# The latest time this process was ever shown, per trajectory: survives Reset (as hidden
# memory would), dies with the process.
_SEEN_MS: dict[str, int] = {}


class SeenClock(JsonMemory):
    """Answers with the latest frame or turn time its process has ever seen in the current
    trajectory, so a test can tell whether a process held data later than the question."""

    name = "seen-clock"

    def __init__(self) -> None:
        super().__init__()
        self.trajectory = ""

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.trajectory = trajectory_id

    def _saw(self, time_ms: int) -> None:
        _SEEN_MS[self.trajectory] = max(_SEEN_MS.get(self.trajectory, -1), time_ms)

    def ingest_frame(self, frame: Frame) -> None:
        self._saw(frame.time_ms)

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self._saw(turn.time_ms)

    def query(self, query: Query) -> Iterator[str]:
        reply = self.answer(query)
        reply["seen_ms"] = _SEEN_MS.get(self.trajectory, -1)
        yield json.dumps(reply)


class ResumingSeenClock(SeenClock):
    """SeenClock declaring R14: its forks start from mid-session snapshots in `restart` mode,
    and what a fork's process has seen still shows in every answer."""

    name = "resuming-seen-clock"
    resumes_sessions = True


class CheapFirstChunk(JsonMemory):
    """Sends "{" at once and thinks afterwards: a time to first token bought, not earned."""

    name = "cheap-first-chunk"

    def query(self, query: Query) -> Iterator[str]:
        reply = json.dumps(self.answer(query))
        yield reply[0]
        time.sleep(1.2)
        yield reply[1:]


class RawFrames(JsonMemory):
    """Keeps every RGB24 frame's pixels (base64): a state past 2 MiB after six 448-pixel
    frames, so importing it takes several chunks of the 2 MiB cap."""

    name = "raw-frames"

    def empty(self) -> dict[str, Any]:
        return {"turns": [], "sessions": [], "frames": 0, "pixels": []}

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name=self.name,
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.RGB24,), preferred_max_side=448
            ),
        )

    def ingest_frame(self, frame: Frame) -> None:
        super().ingest_frame(frame)
        self.memory["pixels"].append(base64.b64encode(frame.data).decode())

    def query(self, query: Query) -> Iterator[str]:
        yield json.dumps(self.answer(query))


class ForkTimeSpy(ResumingJsonMemory):
    """A cheater on R14: an ExportState while a session is open can only mean that a fork
    starts here (the main pass exports mid-session for nothing else), so it writes that
    into the state, and the fork that imports it knows its turn or question is next (work
    it could move into its untimed ImportState). Its answers show whether it knew."""

    name = "fork-time-spy"

    def __init__(self) -> None:
        super().__init__()
        self.open = False

    def start_session(self, start: SessionStart) -> None:
        self.open = True

    def end_session(self, end: SessionEnd) -> None:
        super().end_session(end)
        self.open = False

    def export_state(self) -> ExportedState:
        if self.open:
            self.memory["fork_here_at_frame"] = self.memory["frames"]
        return super().export_state()


class NoSpares(JsonMemory):
    """Declares that its spares may hold nothing (`spare_memory` "0"): as a method whose
    second copy would not fit its GPU says so."""

    name = "no-spares"

    def describe(self) -> SystemInfo:
        info = super().describe()
        return SystemInfo(info.name, info.version, info.capabilities, {"spare_memory": "0"})
