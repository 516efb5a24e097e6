"""A system that keeps what the per-step condition must not let through: a count of every
frame it was ever given, kept across Reset (as a memory system that ignores Reset would),
and said in every step's message ("seen 17 frames"). Under `--variant per-step` in restart
persistence no count may exceed the step's window; in reset persistence the count passes
and the report flags that isolation rests on the system's Reset."""

from __future__ import annotations

import json
from collections.abc import Iterator

from apmbench.adapters.sdk import Capabilities, Frame, Query, SystemInfo
from apmbench.adapters.systems.null import NullSystem

SEEN = [0]
"""Module state, so that Reset cannot clear it: only a fresh process can."""


class FrameCounter(NullSystem):
    """The null system's lifecycle, with a count it keeps across Reset and says."""

    def describe(self) -> SystemInfo:
        return SystemInfo("frame-counter", "1", Capabilities(supports_import=True))

    def reset(self, trajectory_id: str) -> None:
        pass  # keeps SEEN: the cheat

    def ingest_frame(self, frame: Frame) -> None:
        SEEN[0] += 1

    def query(self, query: Query) -> Iterator[str]:
        yield json.dumps({"message": f"seen {SEEN[0]} frames", "tool_calls": []})
