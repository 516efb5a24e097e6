"""ProactEgoMem systems that never look at a pixel: they decide from the clock, the frame
metadata and the step context alone.

`TimingOnlyProactive` is a blind schedule as sparse as the truth: every 7 s it tracks
(or records) the next name the synthetic generator can draw for the clip's task for 4 s
and announces it with that task's template, and at every step it stops an id it never
started (an invalid call the harness must count). On clips whose times, places and
panels are drawn per clip it can only hit by chance.
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

# The names the synthetic generator can draw, per task, as the prompt's tools tell the task.
NAMES = {
    "start_state_tracking": ("tap", "lamp", "stove", "fan", "kettle"),
    "start_location_tracking": ("keys", "wallet", "phone", "glasses", "mug"),
    "start_recording": ("receipt", "timetable", "label", "poster", "screen"),
}
PLACES = ("table", "shelf", "counter", "drawer", "sofa")
CONTEXT = "## Assistant Context & Window of Video"


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
        if "recent_messages" in context:
            # The Notification prompt names no tool: announce every task's template in turn.
            kind = ("start_state_tracking", "start_location_tracking", "start_recording")[
                (second // 21) % 3
            ]
            name = NAMES[kind][(second // 7) % 5]
            template = {
                "start_state_tracking": "You just turned on the {}.",
                "start_location_tracking": "You just placed the {}.",
                "start_recording": "I can see the {}.",
            }[kind]
            message = template.format(name) if second % 7 == 3 else None
            yield json.dumps({"message": message})
            return
        start = next(t for t in NAMES if f"`{t}`" in query.prompt)
        stop = start.replace("start_", "stop_")
        name = NAMES[start][(second // 7) % 5]
        # One invalid call per step: a stop of an id it never started (IC's stop takes no
        # id, so there a start without its `name`).
        bogus = {"id": "xx-999"} if start != "start_recording" else {}
        calls: list[dict[str, object]] = [{"name": stop if bogus else start, "arguments": bogus}]
        if second % 7 == 3:
            args = {"name": name}
            if start != "start_recording":
                args[start.split("_")[1]] = "on" if "state" in start else PLACES[second % 5]
            calls.append({"name": start, "arguments": args})
        calls += [
            {"name": stop, "arguments": {"id": t["instance_id"]}}
            for t in context["active_tools"]
            if second - t["started_at_sec"] >= 4
        ]
        yield json.dumps({"message": "I decided to start tracking.", "tool_calls": calls})

    def export_state(self) -> ExportedState:
        return ExportedState(json.dumps(self.frames).encode(), "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        self.frames = [(int(t), int(w), int(h)) for t, w, h in json.loads(state.data)]


class BlindTracker(TimingOnlyProactive):
    """Five trackers opened at t = 0, one per name the generator can draw, and never closed;
    silent at the Notification Level. It sees nothing and starts nothing near any event: a
    matcher that admits it (overlap alone, no start window) scores it as a perfect recall."""

    def describe(self) -> SystemInfo:
        info = super().describe()
        return SystemInfo(name="blind-tracker", version="1", capabilities=info.capabilities)

    def query(self, query: Query) -> Iterator[str]:
        if query.kind is not QueryKind.DECISION:
            yield json.dumps({"answer": "B"})
            return
        tail = query.prompt.rsplit("## Assistant Context & Window of Video", 1)[-1]
        context = json.loads(next(x for x in tail.splitlines() if x.startswith("{")))
        if "recent_messages" in context:
            yield json.dumps({"message": None})
            return
        start = next(t for t in NAMES if f"`{t}`" in query.prompt)
        calls: list[dict[str, object]] = []
        if not context["active_tools"]:
            for name in NAMES[start]:
                args = {"name": name}
                if start != "start_recording":
                    args[start.split("_")[1]] = "on" if "state" in start else PLACES[0]
                calls.append({"name": start, "arguments": args})
        yield json.dumps({"message": None, "tool_calls": calls})


class StepSpammer(TimingOnlyProactive):
    """The red team's frame-blind spammer: at every step it stops its trackers and starts
    three new ones (one recording for IC), each named with every object word the generator
    can draw, and sends that string as a message. Some tracker starts at every event's
    second, and the word-match similarity accepts the name for any event: Start@0.2, which
    counts only matched predictions, is 100; precision is about 7."""

    EVERY_NAME = " ".join(n for names in NAMES.values() for n in names)

    def describe(self) -> SystemInfo:
        info = super().describe()
        return SystemInfo("step-spammer", "1", info.capabilities)

    def query(self, query: Query) -> Iterator[str]:
        if query.kind is not QueryKind.DECISION or CONTEXT not in query.prompt:
            yield from super().query(query)
            return
        tail = query.prompt.rsplit(CONTEXT, 1)[-1]
        context = json.loads(next(line for line in tail.splitlines() if line.startswith("{")))
        if "recent_messages" in context:
            yield json.dumps({"message": self.EVERY_NAME})
            return
        calls: list[dict[str, object]] = []
        if "`start_recording`" in query.prompt:
            if context["active_tools"]:
                calls.append({"name": "stop_recording", "arguments": {}})
            calls.append({"name": "start_recording", "arguments": {"name": self.EVERY_NAME}})
        else:
            noun = "state" if "start_state_tracking" in query.prompt else "location"
            calls += [
                {"name": f"stop_{noun}_tracking", "arguments": {"id": t["instance_id"]}}
                for t in context["active_tools"]
            ]
            start = {"name": self.EVERY_NAME, noun: "on"}
            calls += [{"name": f"start_{noun}_tracking", "arguments": start}] * 3
        yield json.dumps({"message": None, "tool_calls": calls})
