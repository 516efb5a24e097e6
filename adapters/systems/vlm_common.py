"""The base of the VLM reference systems: the paper's general-model protocols (section 4.1).

A `VlmSystem` keeps what its memory policy keeps (the same policies as
`recent-frames`, `frame-archive` and `text-log`, with their shared code) and
at each query hands a video-language model one prompt: the harness's system
prompt (E.1), the memory as text and video clips, the user's turns of this
session, the current time and the harness's task prompt (E.2-E.4). The
answer is the model's free text, streamed; the harness parses it.

The model comes from `APMBENCH_VLM_*` (see `apmbench.adapters.vlm.settings`):
a local Qwen-VL directory through transformers, or an OpenAI-compatible
endpoint. It is loaded once, when the server starts, before health SERVING.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence

from apmbench.adapters.sdk import (
    Capabilities,
    Frame,
    FrameEncoding,
    Query,
    SessionStart,
    SystemInfo,
    UserTurn,
)
from apmbench.adapters.sdk.clock import format_ms
from apmbench.adapters.systems.frame_archive import RECENT, sample_indices
from apmbench.adapters.systems.perceiving import SessionMemorySystem
from apmbench.adapters.vlm.backend import VideoLanguageModel
from apmbench.adapters.vlm.loader import open_backend
from apmbench.adapters.vlm.prompt import Clip, Part, Prompt, Text, cap_text
from apmbench.adapters.vlm.settings import VlmSettings

TURN_LABELS = {
    "question": "question",
    "registration": "reminder request",
    "interval_marker": "marker",
}


def clock(time_ms: int) -> str:
    """ "HH:MM:SS" of a trajectory time ("DAY2 09:15:03" -> "09:15:03")."""
    return format_ms(time_ms).split(" ", 1)[1]


def span(frames: Sequence[Frame]) -> str:
    return f"{format_ms(frames[0].time_ms)} to {clock(frames[-1].time_ms)}"


def pick(frames: Sequence[Frame], budget: int) -> list[Frame]:
    """At most `budget` frames spread uniformly, with the most recent ones (as frame-archive)."""
    if budget <= RECENT:
        return list(frames[-budget:])
    return [frames[i] for i in sample_indices(len(frames), budget, RECENT)]


def non_empty(parts: Sequence[Part]) -> tuple[Part, ...]:
    return tuple(p for p in parts if not isinstance(p, Text) or p.text)


def turn_lines(turns: Sequence[UserTurn]) -> str:
    lines = [
        f"[{format_ms(t.time_ms)}] user {TURN_LABELS.get(t.kind.value, t.kind.value)}: {t.text}"
        for t in turns
    ]
    return "What the user said in this session:\n" + "\n".join(lines) if lines else ""


class VlmSystem(SessionMemorySystem):
    name = ""
    version = "1"
    memory = ""
    """What ExportState holds, in words (Describe's details)."""

    def __init__(
        self, settings: VlmSettings | None = None, model: VideoLanguageModel | None = None
    ) -> None:
        super().__init__()
        self.settings = settings or VlmSettings.from_env()
        self.model = model or open_backend(self.settings)
        self.session: SessionStart | None = None
        # Computed once: Describe must not change while serving.
        self._info = SystemInfo(
            name=self.name,
            version=self.version,
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG, FrameEncoding.RGB24),
                preferred_max_side=self.settings.max_side,
                supports_import=True,
                streaming_ingest=True,
            ),
            details={"memory": self.memory, **self.settings.record(), **self.model.identity()},
        )

    def describe(self) -> SystemInfo:
        return self._info

    def start_session(self, start: SessionStart) -> None:
        super().start_session(start)
        self.session = start

    @abstractmethod
    def context(self, query: Query) -> list[Part]:
        """The memory and the current session's video, as prompt parts."""

    def current_clip(self, frames: Sequence[Frame], budget: int, label: str) -> list[Part]:
        """This session's frames so far (sampled to `budget`), after `label`."""
        if not frames:
            return []
        picked = pick(frames, budget)
        origin = self.session.time_ms if self.session is not None else picked[0].time_ms
        return [
            Text(f"{label} ({span(frames)}, {len(picked)} of {len(frames)} frames):"),
            Clip(tuple(picked), origin),
        ]

    def prompt(self, query: Query) -> Prompt:
        tail = f"Current time: {format_ms(query.time_ms)}\n\n{query.prompt}"
        parts = [*self.context(query), Text(turn_lines(self.turns)), Text(tail)]
        return Prompt(query.system_prompt, non_empty(parts))

    def query(self, query: Query) -> Iterator[str]:
        pieces = self.model.stream(self.prompt(query), self.settings.max_new_tokens)
        yield from cap_text(pieces, query.max_output_chars)
