"""`vlm-text-memory`: text summaries as memory, written by the model at each session end.

The paper's text-summary protocol (section 4.1, appendix E.5): at EndSession
the model watches the whole session (its frames sampled up to the frame
budget, and the user's turns) under the E.5 writer instruction and answers
the E.5 session-end request; only that summary is kept. At a query the model
gets every earlier summary and the current session's causal prefix. The
policy is `text-log`'s (text written at session end is all that crosses a
gap; the current session is seen, never exported) with a model as the writer.

The export is JSON: per session its id, day, interval and the memory text
(the `memory` field of the writer's JSON answer, or its whole answer when it
gave no such JSON, marked `"parsed": false`), so its bytes are the summaries.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    InvalidArgument,
    Query,
    SessionEnd,
    SessionStart,
)
from apmbench.adapters.systems.summary_prompts import text_summary_request, text_summary_writer
from apmbench.adapters.systems.vlm_common import VlmSystem, clock, non_empty, turn_lines
from apmbench.adapters.vlm.backend import VideoLanguageModel
from apmbench.adapters.vlm.prompt import Part, Prompt, Text
from apmbench.adapters.vlm.settings import VlmSettings

CONTENT_TYPE = "application/x-apmbench-vlm-text-memory+json"
FORMAT = "apmbench-vlm-text-memory"


@dataclass(frozen=True)
class Summary:
    session_id: str
    day_id: str
    start: str
    end: str
    memory: str
    parsed: bool
    """Whether `memory` came from the writer's {"memory": ...} JSON (else: its whole answer)."""

    def render(self) -> str:
        return f"[{self.day_id} {self.start}-{self.end}, session {self.session_id}]\n{self.memory}"


def read_memory(answer: str) -> tuple[str, bool]:
    """The `memory` string of the writer's JSON answer, else the answer itself, stripped."""
    text = answer.strip()
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        try:
            value = json.loads(text[first : last + 1])
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("memory"), str):
            return value["memory"].strip(), True
    return text, False


class VlmTextMemory(VlmSystem):
    name = "vlm-text-memory"
    memory = "one summary per session, written by the model at EndSession (E.5)"

    def __init__(
        self, settings: VlmSettings | None = None, model: VideoLanguageModel | None = None
    ) -> None:
        self.summaries: list[Summary] = []
        self.current: list[Frame] = []  # this session's causal prefix; never exported
        super().__init__(settings, model)

    def forget(self) -> None:
        self.summaries = []
        self.current = []

    def start_session(self, start: SessionStart) -> None:
        super().start_session(start)
        self.current = []

    def ingest_frame(self, frame: Frame) -> None:
        self.current.append(frame)

    def writer_prompt(self, end: SessionEnd) -> Prompt:
        """E.5: the writer instruction, the whole session, then the session-end request."""
        assert self.session is not None, "the SDK only ends an open session"
        start = clock(self.session.time_ms)
        parts: list[Part] = [
            *self.current_clip(self.current, self.settings.max_frames, "The session"),
            Text(turn_lines(self.turns)),
            Text(
                text_summary_request(
                    self.session.day_id, self.session.session_id, start, clock(end.time_ms)
                )
            ),
        ]
        return Prompt(text_summary_writer(), non_empty(parts))

    def end_session(self, end: SessionEnd) -> None:
        assert self.session is not None, "the SDK only ends an open session"
        answer = "".join(
            self.model.stream(self.writer_prompt(end), self.settings.summary_max_new_tokens)
        )
        memory, parsed = read_memory(answer)
        self.summaries.append(
            Summary(
                session_id=self.session.session_id,
                day_id=self.session.day_id,
                start=clock(self.session.time_ms),
                end=clock(end.time_ms),
                memory=memory,
                parsed=parsed,
            )
        )
        self.current = []
        super().end_session(end)

    def context(self, query: Query) -> list[Part]:
        parts: list[Part] = []
        if self.summaries:
            written = "\n\n".join(s.render() for s in self.summaries)
            head = "Memory of earlier sessions, written at the end of each:"
            parts.append(Text(f"{head}\n{written}"))
        parts += self.current_clip(
            self.current, self.settings.max_frames, "The current session so far"
        )
        return parts

    def export_state(self) -> ExportedState:
        document = {
            "format": FORMAT,
            "version": 1,
            "sessions": self.session_index + 1,
            "summaries": [asdict(s) for s in self.summaries],
        }
        data = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return ExportedState(data.encode(), CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        if state.content_type != CONTENT_TYPE:
            raise InvalidArgument(f"{self.name} imports {CONTENT_TYPE}, got {state.content_type}")
        try:
            document = json.loads(state.data)
            if not isinstance(document, dict) or document.get("format") != FORMAT:
                raise ValueError("no format field naming it")
            summaries = [Summary(**s) for s in document["summaries"]]
            sessions = int(document["sessions"])
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidArgument(f"{self.name} state is not a {FORMAT} document: {e}") from e
        self.summaries = summaries
        self.session_index = sessions - 1
        self.current = []
        self.turns = []
