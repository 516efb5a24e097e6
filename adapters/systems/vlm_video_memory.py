"""`vlm-video-memory`: raw video as memory in front of a video-language model.

The paper's comparison target for every memory-compression method (section
4.1): all prior-session video is kept and replayed at query time with the
current session's causal prefix, sampled uniformly up to the frame budget
(APMBENCH_VLM_MAX_FRAMES, 1,024 as in the paper; the most recent frames
always included). The memory is `frame-archive`'s, in its format: every frame
as a JPEG (as the harness sent it, or encoded once from RGB24) and the user's
reminder registrations; the export is a Matroska Motion-JPEG video of those
frames, so the exported bytes are the stored video.
"""

from __future__ import annotations

from itertools import groupby

from apmbench.adapters.sdk import (
    Query,
)
from apmbench.adapters.systems.frame_archive import RECENT as ALWAYS_RECENT
from apmbench.adapters.systems.frame_archive import (
    ArchiveMemory,
    sample_indices,
)
from apmbench.adapters.systems.vlm_common import VlmSystem, span
from apmbench.adapters.vlm.prompt import Clip, Part, Text


class VlmVideoMemory(ArchiveMemory, VlmSystem):
    name = "vlm-video-memory"
    memory = "every frame of every session (JPEG) and reminder registrations"

    def context(self, query: Query) -> list[Part]:
        budget = max(self.settings.max_frames, ALWAYS_RECENT + 1)
        picked = [self.frames[i] for i in sample_indices(len(self.frames), budget, ALWAYS_RECENT)]
        earlier: list[Part] = []
        current: list[Part] = []
        for session, group in groupby(picked, key=lambda item: item[0]):
            frames = [f for _, f in group]
            held = [f for s, f in self.frames if s == session]
            now = session == self.session_index
            label = "The current session so far" if now else "An earlier session"
            (current if now else earlier).extend(
                [
                    Text(f"{label} ({span(held)}, {len(frames)} of {len(held)} frames):"),
                    Clip(tuple(frames), held[0].time_ms),
                ]
            )
        registered = self.earlier_registrations()
        if registered:
            lines = "\n- ".join(registered)
            earlier.append(Text(f"Reminders the user registered in earlier sessions:\n- {lines}"))
        return earlier + current
