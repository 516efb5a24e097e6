"""`vlm-simplestream`: a video-language model on the four most recent frames, no memory.

The paper's no-memory baseline (section 4.1, SimpleStream): the policy of
`recent-frames` (the last `WINDOW` frames of the current session, nothing
kept across sessions, an empty export) in front of a model.
"""

from __future__ import annotations

from collections import deque

from apmbench.adapters.sdk import ExportedState, Frame, Query, SessionEnd
from apmbench.adapters.systems.recent_frames import CONTENT_TYPE, WINDOW
from apmbench.adapters.systems.vlm_common import VlmSystem
from apmbench.adapters.vlm.backend import VideoLanguageModel
from apmbench.adapters.vlm.prompt import Part
from apmbench.adapters.vlm.settings import VlmSettings


class VlmSimpleStream(VlmSystem):
    name = "vlm-simplestream"
    memory = f"none (the {WINDOW} most recent frames of the session)"

    def __init__(
        self, settings: VlmSettings | None = None, model: VideoLanguageModel | None = None
    ) -> None:
        self.frames: deque[Frame] = deque(maxlen=WINDOW)
        super().__init__(settings, model)

    def forget(self) -> None:
        self.frames.clear()

    def ingest_frame(self, frame: Frame) -> None:
        self.frames.append(frame)

    def end_session(self, end: SessionEnd) -> None:
        super().end_session(end)
        self.frames.clear()

    def context(self, query: Query) -> list[Part]:
        return self.current_clip(list(self.frames), WINDOW, "The most recent frames")

    def export_state(self) -> ExportedState:
        return ExportedState(b"", CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        self.reset("")
