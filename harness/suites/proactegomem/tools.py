"""The tool state the harness owns during a clip's per-second steps (paper section 5.2, appendix K).

Every step's answer is parsed into one action and applied at the step's time:
valid tool calls start or stop tracker instances, invalid ones (unknown tool,
stopping an id that is not active, malformed arguments) are counted and
ignored, and unparseable output is silence. The same pure functions run live
(to render the next step's context) and at scoring (replaying the recorded raw
answers), so a re-score sees exactly the state the system saw.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from apmbench.harness.json_types import JSON

INTERVENTION, NOTIFICATION = "intervention", "notification"
LEVELS = (INTERVENTION, NOTIFICATION)
RECENT = 5
"""Completed intervals (Intervention) or messages (Notification) the context lists."""


def tool_names(task: str) -> tuple[str, str]:
    if task == "IC":
        return "start_recording", "stop_recording"
    noun = {"ST": "state", "LT": "location"}[task]
    return f"start_{noun}_tracking", f"stop_{noun}_tracking"


def argument_key(task: str) -> str:
    """The start tool's second argument; IC's recording has none (only `name`)."""
    return {"ST": "state", "LT": "location", "IC": ""}[task]


@dataclass(frozen=True)
class Parsed:
    """One step's answer: `ok` False means unparseable (silence)."""

    ok: bool
    message: str | None
    tool_calls: tuple[JSON, ...]
    """As the answer wrote them: each is checked when applied (`ToolState.apply`)."""
    error: str = ""


def parse_step(text: str, level: str) -> Parsed:
    """The answer as the paper reads it: one JSON object, else silence."""
    try:
        doc = json.loads(text.strip())
    except ValueError:
        return Parsed(False, None, (), "not one JSON object")
    if not isinstance(doc, dict):
        return Parsed(False, None, (), "not a JSON object")
    message = doc.get("message")
    if message is not None and not isinstance(message, str):
        return Parsed(False, None, (), "`message` is neither a string nor null")
    if level == NOTIFICATION:
        return Parsed(True, message.strip() or None if message else None, ())
    calls = doc.get("tool_calls", [])
    if not isinstance(calls, list):
        return Parsed(False, None, (), "`tool_calls` is not a list")
    return Parsed(True, message, tuple(calls))


@dataclass
class Instance:
    instance_id: str
    tool_name: str
    started_at_sec: float
    arguments: dict[str, JSON]


class Interval(TypedDict):
    """A tracker from its start to its stop (or the clip's end: `end_tool_name` "")."""

    instance_id: str
    start_tool_name: str
    end_tool_name: str
    started_at_sec: float
    ended_at_sec: float
    arguments: dict[str, JSON]


class Message(TypedDict):
    timestamp_sec: float
    step_index: int
    message: str


class Action(TypedDict):
    """One applied action, as a step's row records it (`actions`): a message, or a tool
    call, valid or not (`error` says why not)."""

    kind: str
    """"message" or "tool_call"."""
    time_sec: float
    message: str | None
    tool: NotRequired[str]
    arguments: NotRequired[dict[str, JSON]]
    instance_id: NotRequired[str]
    valid: NotRequired[bool]
    error: NotRequired[str]


class ActiveTool(TypedDict):
    instance_id: str
    tool_name: str
    started_at_sec: float
    arguments: dict[str, JSON]


class NotificationContext(TypedDict):
    current_time_sec: float
    recent_messages: list[Message]


class InterventionContext(TypedDict):
    current_time_sec: float
    active_tools: list[ActiveTool]
    completed_tool_intervals: list[Interval]


Context = NotificationContext | InterventionContext
"""The tool state a step's prompt shows the system (appendix K's context JSON)."""


@dataclass
class ToolState:
    """Active instances, completed intervals, messages and every applied action of one clip."""

    task: str
    level: str
    active: list[Instance] = field(default_factory=list)
    completed: list[Interval] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    closing: dict[str, str | None] = field(default_factory=dict)
    """Instance id -> the message of the step that stopped it (the closing-message judge
    reads it; the context the system sees does not list it)."""
    invalid_calls: int = 0
    unparseable: int = 0
    next_id: int = 1

    def context(self, now_sec: float) -> Context:
        if self.level == NOTIFICATION:
            return {"current_time_sec": now_sec, "recent_messages": self.messages[-RECENT:]}
        return {
            "current_time_sec": now_sec,
            "active_tools": [
                {
                    "instance_id": i.instance_id,
                    "tool_name": i.tool_name,
                    "started_at_sec": i.started_at_sec,
                    "arguments": i.arguments,
                }
                for i in self.active
            ],
            "completed_tool_intervals": self.completed[-RECENT:],
        }

    def apply(self, step_index: int, now_sec: float, text: str) -> list[Action]:
        """Apply one step's raw answer; returns the actions it produced (valid or not)."""
        parsed = parse_step(text, self.level)
        if not parsed.ok:
            self.unparseable += 1
            return []
        if self.level == NOTIFICATION:
            if parsed.message is None:
                return []
            entry: Message = {
                "timestamp_sec": now_sec,
                "step_index": step_index,
                "message": parsed.message,
            }
            self.messages.append(entry)
            return [{"kind": "message", "time_sec": now_sec, "message": parsed.message}]
        return [self._call(now_sec, call, parsed.message) for call in parsed.tool_calls]

    def _call(self, now: float, call: JSON, message: str | None) -> Action:
        start, stop = tool_names(self.task)
        action: Action = {"kind": "tool_call", "time_sec": now, "message": message}
        read = _read_call(call)
        problem = read if isinstance(read, str) else None
        if not isinstance(read, str):
            name, args = read
            action["tool"] = name
            action["arguments"] = args
            if name == start:
                key = argument_key(self.task)
                wanted = {"name", key} if key else {"name"}
                needs = f"`name` and `{key}`" if key else "`name`"
                if not _text(args.get("name")) or (key and not _text(args.get(key))):
                    problem = f"{start} needs string arguments {needs}"
                elif set(args) != wanted or any(
                    len(str(args[k])) > MAX_ARGUMENT_CHARS for k in wanted
                ):
                    # What a start keeps is shown back in every later step's context: an
                    # extra or long argument would be a memory the system writes for itself
                    # (the per-step condition's promise is 10 frames and the context).
                    problem = (
                        f"{start} takes exactly {needs}, each at most {MAX_ARGUMENT_CHARS} "
                        "characters"
                    )
                elif self.task == "IC" and self.active:
                    # The paper's IC keeps a single recording, which is why its stop has no id.
                    problem = f"{start}: a recording is already active; call {stop} first"
                else:
                    iid = f"{self.task.lower()}-{self.next_id}"
                    self.next_id += 1
                    self.active.append(Instance(iid, start, now, dict(args)))
                    action["instance_id"] = iid
            elif name == stop:
                target = args.get("id")
                hit = [i for i in self.active if i.instance_id == target]
                if self.task == "IC":
                    hit = self.active[:1]
                    target = hit[0].instance_id if hit else None
                if not hit and self.task == "IC":
                    problem = f"{stop}: no recording is active"
                elif not hit:
                    problem = f"{stop}: {target!r} is not an active instance id"
                else:
                    self.active.remove(hit[0])
                    self.completed.append(_interval(hit[0], stop, now))
                    self.closing[hit[0].instance_id] = message
                    action["instance_id"] = hit[0].instance_id  # the id the call named
            else:
                problem = f"unknown tool {name!r} (tools: {start}, {stop})"
        if problem is not None:
            self.invalid_calls += 1
            action["valid"] = False
            action["error"] = problem
        else:
            action["valid"] = True
        return action

    def intervals(self, end_sec: float) -> list[Interval]:
        """Every tracker of the clip; one still active at the end closes at the clip's end."""
        still = [_interval(i, "", end_sec) for i in self.active]
        return sorted(self.completed + still, key=lambda r: (r["started_at_sec"], r["instance_id"]))


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _read_call(call: JSON) -> tuple[str, dict[str, JSON]] | str:
    """A tool call's name and arguments, or what is wrong with it."""
    if not isinstance(call, dict) or set(call) != {"name", "arguments"}:
        return "a tool call must be an object with exactly `name` and `arguments`"
    name, args = call["name"], call["arguments"]
    if not isinstance(name, str):
        return "a tool call's `name` must be a string"
    if not isinstance(args, dict):
        return "a tool call's `arguments` must be a JSON object"
    return name, args


def _interval(instance: Instance, end_tool: str, ended: float) -> Interval:
    return {
        "instance_id": instance.instance_id,
        "start_tool_name": instance.tool_name,
        "end_tool_name": end_tool,
        "started_at_sec": instance.started_at_sec,
        "ended_at_sec": ended,
        "arguments": instance.arguments,
    }


def replay(
    task: str, level: str, steps: Iterable[tuple[int, float, str]]
) -> tuple[ToolState, list[Action]]:
    """Re-apply recorded (step_index, time_sec, raw answer) in order: the live state, again."""
    state = ToolState(task, level)
    actions: list[Action] = []
    for index, now, text in sorted(steps):
        actions += state.apply(index, now, text)
    return state, actions


WINDOW = 10
"""Frames a step's window lists (section 5.2: the 10 most recent)."""
MAX_ARGUMENT_CHARS = 120
"""A tracker's name and its state or location, at most: an object name and a short state,
as the paper's tools take them, with room to spare (a longer one is an invalid call). It
bounds what a per-step system can write itself in an open tracker's arguments; a red
team's spammer naming every object word of the synthetic clips (93 characters) stays
valid, so the headline's defence against it (F1 charges every false tracker) still
shows (test_proactegomem_suite)."""
PER_STEP = "per-step"
"""`evaluate --variant per-step`: the paper's condition, each step given only its window."""


def frame_window(times_sec: Sequence[float], now_sec: float, size: int = WINDOW) -> str:
    """The window's listing: relative frame numbers and clip-local timestamps, newest last."""
    recent = [t for t in times_sec if t <= now_sec][-size:]
    lines = [f"Frame {k + 1}: t={t:.1f}s" for k, t in enumerate(recent)]
    return "\n".join(lines)


def render_step(prompt: str, context: Context, window: str) -> str:
    return f"{prompt}\n\n{json.dumps(context, ensure_ascii=False)}\n\n{window}"
