"""A clip's plan: one step query per second at each proactive level, then memory QA.

- The first level's pass is the "main" segment, any other level an "after"
  segment (a fresh memory replaying the whole clip): at every second the
  harness pushes the frame of that second and asks a step query whose prompt
  is the paper's, followed by the JSON context the harness renders from the
  tool state it owns (`tools.ToolState`) and the window of the 10 most recent
  frames (numbers and clip-local timestamps). Each answer updates that state
  before the next second.
- Memory QA: one "after" segment per condition, each a fresh session (Reset,
  then only that condition's frames, then the questions): No Memory pushes 40
  frames uniform over the clip and lists no memory; Proact Memory lists the
  trackers the system's own calls kept in the intervention pass; Oracle Memory
  lists the ground-truth intervals. On ST and LT the memory is text only, as in
  the paper, so those two conditions push no frame; on IC they push up to 40
  frames uniform over the memory's segments (the recordings' frames).

On a public part of `apmbench-grpc split` (no events) the Oracle Memory condition is not
planned: it would show the events. Every ask there is marked `labels_withheld`, so scoring
reports that condition as not run rather than as empty.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

from apmbench.adapters.sdk.types import Choice, Query, QueryKind
from apmbench.harness.json_types import JsonObject
from apmbench.harness.media.frames import frame_times
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.plan import Ask, AskState, Segment
from apmbench.harness.suites.proactegomem import prompts
from apmbench.harness.suites.proactegomem.dataset import Clip, Dataset, Question
from apmbench.harness.suites.proactegomem.tools import (
    INTERVENTION,
    NOTIFICATION,
    WINDOW,
    ToolState,
    argument_key,
    frame_window,
    render_step,
    tool_names,
)

NO_MEMORY_FRAMES = 40
STEP_MS = 1000
"""Section 5.2: a step every second of video (the plan's frame times at 1 fps)."""


@dataclass(frozen=True)
class StepItem:
    clip_id: str
    level: str
    step_index: int
    ground_truth: str = "[]"
    """The clip's annotated events as JSON (`ground_truth`), which grading puts in the
    step's row for the matching; never in the plan."""


@dataclass(frozen=True)
class QAItem:
    question: Question
    condition: str


def step_schema(level: str, task: str) -> str:
    if level == NOTIFICATION:
        schema: JsonObject = {
            "type": "object",
            "properties": {"message": {"type": ["string", "null"]}},
            "required": ["message"],
            "additionalProperties": False,
        }
    else:
        start, stop = tool_names(task)
        schema = {
            "type": "object",
            "properties": {
                "message": {"type": ["string", "null"]},
                "tool_calls": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"enum": [start, stop]},
                            "arguments": {
                                "type": "object",
                                "description": f"{start}: name, {argument_key(task)}; {stop}: id",
                            },
                        },
                        "required": ["name", "arguments"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["message", "tool_calls"],
            "additionalProperties": False,
        }
    return json.dumps(schema, sort_keys=True)


def qa_schema() -> str:
    return json.dumps(
        {
            "type": "object",
            "properties": {"answer": {"enum": ["A", "B", "C", "D"]}},
            "required": ["answer"],
            "additionalProperties": False,
        },
        sort_keys=True,
    )


class ClipRun:
    """What one clip's segments share: the tool state of each level, owned by the harness."""

    def __init__(self, clip: Clip, frame_secs: list[float]) -> None:
        self.clip = clip
        self.frame_secs = frame_secs
        self.states: dict[str, ToolState] = {}

    def step_state(self, level: str) -> Callable[[], AskState]:
        def build() -> AskState:
            state = self.states[level] = ToolState(self.clip.task, level)
            return _Steps(self, state, level)

        return build

    def shared_step_state(self, level: str) -> Callable[[], AskState]:
        """One level's tool state across the per-step segments, each of which asks for it."""
        shared: list[AskState] = []

        def build() -> AskState:
            if not shared:
                shared.append(self.step_state(level)())
            return shared[0]

        return build

    def segments(self, condition: str) -> list[tuple[str, str, float, float]]:
        """(name, tracked value, start, end) of each memory entry under `condition`."""
        key = argument_key(self.clip.task)
        if condition == prompts.PROACT_MEMORY:
            state = self.states.get(INTERVENTION)
            if state is None:
                return []
            return [
                (
                    str(r["arguments"].get("name", "")),
                    str(r["arguments"].get(key, "")) if key else "",
                    r["started_at_sec"],
                    r["ended_at_sec"],
                )
                for r in state.intervals(self.clip.duration_s)
            ]
        if condition == prompts.ORACLE_MEMORY:
            # The annotated state or location; an event without one says so rather than
            # the Oracle inventing it.
            unknown = {"ST": "not annotated", "LT": "not annotated", "IC": ""}[self.clip.task]
            return [
                (e.object, e.state or e.location or unknown, e.start_s, e.end_s)
                for e in self.clip.events
            ]
        return []

    def memory(self, condition: str) -> list[str]:
        key = argument_key(self.clip.task)
        return [
            f"- {name} ({key}: {value}): from {start:.1f} s to {end:.1f} s"
            if key
            else f"- {name}: from {start:.1f} s to {end:.1f} s"
            for name, value, start, end in self.segments(condition)
        ]

    def memory_frames(self, condition: str) -> list[int]:
        """IC's evidence frames: up to 40 uniform over the memory's segments (ms)."""
        if self.clip.task != "IC":
            return []
        spans = self.segments(condition)
        inside = [
            round(t * 1000)
            for t in self.frame_secs
            if any(s <= t < e or s == t == e for _, _, s, e in spans)
        ]
        return uniform_frames(inside)


class _Steps:
    def __init__(self, run: ClipRun, state: ToolState, level: str) -> None:
        self.run = run
        self.state = state
        self.prompt = (
            prompts.intervention_prompt(run.clip.task)
            if level == INTERVENTION
            else prompts.notification_prompt(run.clip.task)
        )

    def render(self, ask: Ask, query: Query) -> Query:
        now = ask.time_ms / 1000.0
        window = frame_window(self.run.frame_secs, now)
        return replace(query, prompt=render_step(self.prompt, self.state.context(now), window))

    def update(self, ask: Ask, record: dict[str, object]) -> None:
        step, raw = ask.fields["step_index"], record["raw_output"]
        # Live (`evaluate --live`), the call acts when its answer arrived, as scoring has it.
        acted = record.get("effective_ms", ask.time_ms)
        assert isinstance(step, int) and isinstance(raw, str) and isinstance(acted, int)
        record["actions"] = self.state.apply(step, acted / 1000.0, raw)


class _Questions:
    def __init__(self, run: ClipRun, condition: str, frames: str) -> None:
        self.run = run
        self.condition = condition
        self.frames = frames

    def render(self, ask: Ask, query: Query) -> Query:
        memory = self.run.memory(self.condition)
        frames = self.frames
        if self.run.clip.task == "IC" and self.condition != prompts.NO_MEMORY:
            kept = self.run.memory_frames(self.condition)
            frames = _listing(kept, "sampled uniformly from the memory's segments")
        choices = [(c.option_id, c.text) for c in query.choices]
        prompt = prompts.qa_prompt(
            self.condition, memory, frames, query.question, choices, self.run.clip.task
        )
        return replace(query, prompt=prompt)

    def update(self, ask: Ask, record: dict[str, object]) -> None:
        record["memory"] = self.run.memory(self.condition)


def _listing(kept: list[int], how: str) -> str:
    if not kept:
        return "(none: the memory holds no frame)"
    listed = ", ".join(f"{t / 1000:.1f}" for t in kept)
    return f"{len(kept)} frames {how}, pushed before this question, at t = {listed} s."


def _memory_keep(run: ClipRun, condition: str) -> Callable[[int], bool]:
    """IC's frame filter: the Proact segments exist only once the intervention pass ran."""
    cache: list[set[int]] = []

    def keep(time_ms: int) -> bool:
        if not cache:
            cache.append(set(run.memory_frames(condition)))
        return time_ms in cache[0]

    return keep


def uniform_frames(frame_ms: list[int], count: int = NO_MEMORY_FRAMES) -> list[int]:
    if len(frame_ms) <= count:
        return list(frame_ms)
    n = len(frame_ms)
    return sorted({frame_ms[round(k * (n - 1) / (count - 1))] for k in range(count)})


def conditions(dataset: Dataset) -> tuple[str, ...]:
    """The memory conditions planned: all three, but Oracle Memory where the labels (the
    events it lists) are withheld."""
    if dataset.labels_withheld:
        return tuple(c for c in prompts.CONDITIONS if c != prompts.ORACLE_MEMORY)
    return prompts.CONDITIONS


def step_instance(clip_id: str, level: str, k: int) -> str:
    return f"{clip_id}:{level}:{k:04d}"


def qa_instance(question_id: str, condition: str) -> str:
    return f"{question_id}:{condition.split()[0].lower()}"


def plan_clip(dataset: Dataset, trajectory: Trajectory) -> list[Segment]:
    clip = dataset.clip(trajectory.trajectory_id)
    session = trajectory.sessions[0]
    times = frame_times(session, 1000 / STEP_MS)
    run = ClipRun(clip, [t / 1000.0 for t in times])
    # Survives `score --labels`, which replaces only the fields the labelled plan has.
    marked: JsonObject = {"labels_withheld": True} if dataset.labels_withheld else {}
    segments: list[Segment] = []
    for n, level in enumerate(dataset.levels):
        schema = step_schema(level, clip.task)
        asks = []
        for k, t in enumerate(times):
            # The prompt is rendered from the tool state just before the step is asked.
            query = Query("", t, QueryKind.DECISION, "", "", answer_schema=schema)
            fields: JsonObject = {
                "role": "step",
                "trajectory_id": clip.clip_id,
                "level": level,
                "task": clip.task,
                "step_index": k,
                "clip_end_s": clip.duration_s,
                # Without a judge, only the synthetic suite's word match may stand in for one.
                "synthetic": dataset.synthetic,
                "track": dataset.track,
                **marked,
            }
            iid = step_instance(clip.clip_id, level, k)
            asks.append(Ask(iid, 0, t, query, fields, period_ms=STEP_MS))
        if dataset.per_step:
            segments += _per_step(level, asks, times, run.shared_step_state(level))
            continue
        segments.append(
            Segment(
                kind="main" if n == 0 else "after",
                name=level,
                first_session=0,
                last_session=0,
                snapshot_after=None,
                turns=(),
                asks=tuple(asks),
                stop_after_last_ask=n != 0,
                state=run.step_state(level),
            )
        )
    if not clip.questions:
        return segments
    uniform = uniform_frames(times)
    for condition in conditions(dataset):
        keep: Callable[[int], bool]
        if condition == prompts.NO_MEMORY:
            keep = set(uniform).__contains__
            frames = _listing(uniform, "sampled uniformly from the clip")
        elif clip.task == "IC":
            keep = _memory_keep(run, condition)
            frames = ""  # listed when asked: the Proact segments are known only then
        else:
            keep = set().__contains__
            frames = "(none: on this task the memory is text only)"
        asks = []
        for q in clip.questions:
            choices = tuple(Choice(o, text) for o, text in q.choices)
            query = Query(
                "",
                session.end_ms,
                QueryKind.MULTIPLE_CHOICE,
                "",
                "",
                q.question,
                choices,
                answer_schema=qa_schema(),
            )
            qa_fields: JsonObject = {
                "role": "qa",
                "trajectory_id": clip.clip_id,
                "condition": condition,
                "question_id": q.question_id,
                "category": q.category,
                "task": clip.task,
                **marked,
            }
            iid = qa_instance(q.question_id, condition)
            asks.append(Ask(iid, 0, session.end_ms, query, qa_fields))
        segments.append(
            Segment(
                kind="after",
                name=f"qa-{condition.split()[0].lower()}",
                first_session=0,
                last_session=0,
                snapshot_after=None,
                turns=(),
                asks=tuple(asks),
                stop_after_last_ask=True,
                state=_qa_state(run, condition, frames),
                keep_frame=keep,
            )
        )
    return segments


def _per_step(
    level: str, asks: list[Ask], times: list[int], state: Callable[[], AskState]
) -> list[Segment]:
    """The paper's per-step condition (section 5.2: at each step a model sees the prompt,
    the context JSON and the 10 most recent frames, and nothing else): every step is its
    own runtime instance, from an empty memory (a fresh process in `restart` persistence,
    the system's Reset otherwise, which the report then says), given only the frames the
    step's window lists, then asked. The tool state, the harness's, runs on across steps."""
    out = []
    for ask in asks:
        window = set([t for t in times if t <= ask.time_ms][-WINDOW:])
        out.append(
            Segment(
                kind="recent",
                name=f"{level}@{ask.time_ms}",
                first_session=0,
                last_session=0,
                snapshot_after=None,
                turns=(),
                asks=(ask,),
                stop_after_last_ask=True,
                state=state,
                keep_frame=window.__contains__,
            )
        )
    return out


def _qa_state(run: ClipRun, condition: str, frames: str) -> Callable[[], AskState]:
    return lambda: _Questions(run, condition, frames)


def ground_truth(clip: Clip) -> str:
    """The clip's events as the matching reads them from each step's row."""
    return json.dumps(
        [
            {"event_id": e.event_id, "object": e.object, "start_s": e.start_s, "end_s": e.end_s}
            for e in clip.events
        ]
    )


def items(dataset: Dataset) -> dict[str, StepItem | QAItem]:
    out: dict[str, StepItem | QAItem] = {}
    for traj in dataset.trajectories:
        clip = dataset.clip(traj.trajectory_id)
        n = len(frame_times(traj.sessions[0], 1.0))
        truth = ground_truth(clip)
        for level in dataset.levels:
            for k in range(n):
                iid = step_instance(clip.clip_id, level, k)
                out[iid] = StepItem(clip.clip_id, level, k, truth)
        for q in clip.questions:
            for condition in conditions(dataset):
                out[qa_instance(q.question_id, condition)] = QAItem(q, condition)
    return out
