"""`proact-rules`: a rule-based proactive memory that reads pixels (ProactEgoMem's synthetic clips).

It knows the colours of the synthetic devices (as a detector would know its
classes) and finds, in each frame it is pushed, which devices are lit. At a
step query it reads the JSON context that follows the prompt: at the
Intervention Level it starts a tracker for every lit device without one and
stops every tracker whose device went dark; at the Notification Level it
says "You just turned on the ..." on the frame a device lights up. For a
memory question it uses the memory listed in the prompt when there is one,
else the frames it was pushed in that session.

Every decision comes from the frames it was pushed and the prompt; it never
sees a label. Its memory (the detections per frame) is its exported state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import numpy as np

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
)

CONTENT_TYPE = "application/x-apmbench-proact-rules+json"
# The synthetic devices' colours when lit (dim to a third when off).
PALETTE: dict[str, tuple[int, int, int]] = {
    "tap": (40, 120, 240),
    "lamp": (250, 220, 40),
    "stove": (240, 60, 40),
    "fan": (50, 210, 90),
    "kettle": (200, 70, 220),
}
MIN_PIXELS = 300
"""Lit pixels of one colour that make a device count as on (a lit square is ~3000 at 320x240)."""

_CONTEXT = "## Assistant Context & Window of Video"
_MEMORY = re.compile(r"^- (\S+) \([^)]*\): from ([\d.]+) s to ([\d.]+) s$", re.M)


def lit(rgb: np.ndarray) -> list[str]:
    """The devices lit in one frame, by name."""
    px = rgb.reshape(-1, 3).astype(np.int16)
    out = []
    for name, colour in PALETTE.items():
        near = np.abs(px - np.array(colour, dtype=np.int16)).max(axis=1) < 40
        if int(near.sum()) >= MIN_PIXELS:
            out.append(name)
    return out


class ProactRules(MemorySystem):
    def __init__(self) -> None:
        self.seen: list[tuple[int, list[str]]] = []

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="proact-rules",
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.RGB24, FrameEncoding.JPEG),
                preferred_max_side=320,
                supports_import=True,
                streaming_ingest=True,
            ),
            details={"reads": "pixels (the synthetic ProactEgoMem palette)"},
        )

    def reset(self, trajectory_id: str) -> None:
        self.seen = []

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        self.seen.append((frame.time_ms, lit(frame.rgb())))

    def ingest_user_turn(self, turn: UserTurn) -> None:
        pass

    def end_session(self, end: SessionEnd) -> None:
        pass

    # -- steps -------------------------------------------------------------------

    def _now(self, time_ms: int) -> tuple[list[str], list[str]]:
        """Lit devices in the latest frame at or before `time_ms`, and in the one before it."""
        upto = [names for t, names in self.seen if t <= time_ms]
        now = upto[-1] if upto else []
        before = upto[-2] if len(upto) > 1 else []
        return now, before

    def _step(self, query: Query) -> str:
        now, before = self._now(query.time_ms)
        tail = query.prompt.split(_CONTEXT, 1)[-1]
        context = json.loads(next(line for line in tail.splitlines() if line.startswith("{")))
        if "recent_messages" in context:
            new = [n for n in now if n not in before]
            message = " ".join(f"You just turned on the {n}." for n in new) or None
            return json.dumps({"message": message})
        noun = "state" if "start_state_tracking" in query.prompt else "location"
        active = {t["arguments"].get("name"): t["instance_id"] for t in context["active_tools"]}
        calls = [
            {"name": f"start_{noun}_tracking", "arguments": {"name": n, noun: "on"}}
            for n in now
            if n not in active
        ]
        calls += [
            {"name": f"stop_{noun}_tracking", "arguments": {"id": iid}}
            for n, iid in active.items()
            if n not in now
        ]
        message = None
        if calls:
            message = f"I decided to update {noun} tracking because a device changed {noun}."
        return json.dumps({"message": message, "tool_calls": calls})

    # -- memory questions --------------------------------------------------------

    def _spans(self, prompt: str) -> list[tuple[str, float, float]]:
        memory = prompt.split("## Memory", 1)[-1].split("## Evidence Frames", 1)[0]
        listed = [(m[1], float(m[2]), float(m[3])) for m in _MEMORY.finditer(memory)]
        if listed:
            return listed
        # No memory listed: runs of lit samples among the frames this session was pushed.
        spans: list[tuple[str, float, float]] = []
        open_: dict[str, float] = {}
        last = 0.0
        for t, names in self.seen:
            for n in list(open_):
                if n not in names:
                    spans.append((n, open_.pop(n), t / 1000.0))
            for n in names:
                open_.setdefault(n, t / 1000.0)
            last = t / 1000.0
        spans += [(n, s, last) for n, s in open_.items()]
        return spans

    def _qa(self, query: Query) -> str:
        spans = self._spans(query.prompt)
        q = query.question
        guess: str | None = None
        if m := re.match(r"How many times was the (\S+) turned on\?", q):
            guess = str(sum(1 for n, _, _ in spans if n == m[1]))
        elif q.startswith("Which device stayed on the longest") and spans:
            guess = max(spans, key=lambda s: s[2] - s[1])[0]
        elif q.startswith("Which device was turned on first") and spans:
            guess = min(spans, key=lambda s: s[1])[0]
        for c in query.choices:
            if c.text == guess:
                return json.dumps({"answer": c.option_id})
        return json.dumps({"answer": query.choices[0].option_id if query.choices else "A"})

    def query(self, query: Query) -> Iterator[str]:
        if query.kind is QueryKind.DECISION and _CONTEXT in query.prompt:
            yield self._step(query)
        else:
            yield self._qa(query)

    def export_state(self) -> ExportedState:
        data = json.dumps(self.seen, separators=(",", ":")).encode()
        return ExportedState(data, CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        if state.content_type != CONTENT_TYPE or state.format_version != 1:
            raise InvalidArgument(f"proact-rules imports {CONTENT_TYPE} v1")
        try:
            self.seen = [(int(t), [str(n) for n in names]) for t, names in json.loads(state.data)]
        except (ValueError, TypeError) as e:
            raise InvalidArgument(f"proact-rules state is not its JSON: {e}") from e
