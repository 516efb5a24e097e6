"""ProactEgoMem systems that never look at a pixel: they decide from the clock, the frame
metadata and the step context alone.

`TimingOnlyProactive` is a blind schedule as sparse as the truth: every 7 s it tracks
the next device name the synthetic generator can draw for 4 s and announces it, and at
every step it stops an id it never started (an invalid call the harness must count). On
clips whose switching times are drawn per clip it can only hit by chance.
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

NAMES = ("tap", "lamp", "stove", "fan", "kettle")


class TimingOnlyProactive(MemorySystem):
    def __init__(self) -> None:
        self.frames: list[tuple[int, int, int]] = []

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="timing-only-proactive",
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG,),
                preferred_max_side=320,
                supports_import=True,
                streaming_ingest=True,
            ),
        )

    def reset(self, trajectory_id: str) -> None:
        self.frames = []

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        self.frames.append((frame.time_ms, frame.width, frame.height))

    def ingest_user_turn(self, turn: UserTurn) -> None:
        pass

    def end_session(self, end: SessionEnd) -> None:
        pass

    def query(self, query: Query) -> Iterator[str]:
        if query.kind is not QueryKind.DECISION:
            yield json.dumps({"answer": "B"})
            return
        tail = query.prompt.rsplit("## Assistant Context & Window of Video", 1)[-1]
        context = json.loads(next(x for x in tail.splitlines() if x.startswith("{")))
        second = query.time_ms // 1000
        name = NAMES[(second // 7) % len(NAMES)]
        if "recent_messages" in context:
            message = f"You just turned on the {name}." if second % 7 == 3 else None
            yield json.dumps({"message": message})
            return
        calls: list[dict[str, object]] = [
            {"name": "stop_state_tracking", "arguments": {"id": "st-999"}}
        ]
        if second % 7 == 3:
            calls.append(
                {"name": "start_state_tracking", "arguments": {"name": name, "state": "on"}}
            )
        calls += [
            {"name": "stop_state_tracking", "arguments": {"id": t["instance_id"]}}
            for t in context["active_tools"]
            if second - t["started_at_sec"] >= 4
        ]
        yield json.dumps({"message": "I decided to start tracking.", "tool_calls": calls})

    def export_state(self) -> ExportedState:
        return ExportedState(json.dumps(self.frames).encode(), "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        self.frames = [(int(t), int(w), int(h)) for t, w, h in json.loads(state.data)]
