"""A red team's cheater against ProactEgoMem's per-step condition (`--variant per-step`):
each step is a fresh process holding 10 frames, but the context the harness renders shows
the system its own active trackers back, arguments and all. This system writes a count of
every frame it has ever seen into an extra `memo` argument of a tracker it restarts every
step, and reads it back at the next: the whole clip's count crossed the steps (30 frames
on tiny) until a start call took exactly its `name` and state or location, each short."""

from __future__ import annotations

import json
from collections.abc import Iterator

from apmbench.adapters.sdk import Capabilities, Frame, Query, SystemInfo
from apmbench.adapters.systems.null import NullSystem


class Smuggler(NullSystem):
    """The null system's lifecycle; the frame times it was given, and the memo."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[int] = []

    def describe(self) -> SystemInfo:
        return SystemInfo("per-step-smuggler", "1", Capabilities(supports_import=True))

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.times = []

    def ingest_frame(self, frame: Frame) -> None:
        self.times.append(frame.time_ms)

    def query(self, query: Query) -> Iterator[str]:
        context = None
        for line in query.prompt.splitlines():
            if line.startswith('{"current_time_sec"'):
                context = json.loads(line)
        if context is None:
            yield json.dumps({"answer": "A"})
            return
        seen, last, memo_id = 0, -1, None
        for tool in context.get("active_tools", []):
            memo = tool["arguments"].get("memo")
            if isinstance(memo, dict):
                seen, last, memo_id = memo["seen"], memo["last"], tool["instance_id"]
        new = [t for t in self.times if t > last]
        seen, last = seen + len(new), max([*self.times, last])
        memo = {"seen": seen, "last": last}
        calls: list[dict[str, object]] = []
        if "start_recording" in query.prompt:
            if memo_id:
                calls.append({"name": "stop_recording", "arguments": {}})
            calls.append({"name": "start_recording", "arguments": {"name": "memo", "memo": memo}})
        else:
            noun = "state" if "start_state_tracking" in query.prompt else "location"
            if memo_id:
                calls.append({"name": f"stop_{noun}_tracking", "arguments": {"id": memo_id}})
            args = {"name": "memo", noun: "x", "memo": memo}
            calls.append({"name": f"start_{noun}_tracking", "arguments": args})
        yield json.dumps({"message": f"seen {seen}", "tool_calls": calls})
