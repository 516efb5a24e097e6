"""Settings of the specialised memory systems (`kv-memory`, `event-memory`).

Read like the other VLM settings, from `APMBENCH_VLM_*` variables when the
system is built, and recorded in Describe's details (so in every run's
manifest) as `vlm.<field>`. Kept apart from `VlmSettings` so that the general
systems' manifests do not list knobs they do not have.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from apmbench.adapters.vlm.settings import PREFIX, VlmConfigError, _parse


@dataclass(frozen=True)
class MemorySettings:
    """Field `x` is read from `APMBENCH_VLM_X`."""

    frames_per_block: int = 2
    """kv-memory: frames per KV block (one temporal patch of Qwen-VL is 2 frames)."""
    top_k: int = 8
    """kv-memory: blocks loaded per query, besides the most recent one. event-memory: sessions
    kept at the session level of the descent, and events kept under them."""
    event_threshold: float = 0.15
    """event-memory: a frame whose pooled visual embedding is further than this cosine distance
    from the open event's mean starts a new event."""
    key_frames: int = 3
    """event-memory: frames kept per event (first, last and evenly spaced between)."""
    caption_max_new_tokens: int = 32
    """event-memory: longest event caption, in tokens."""
    max_event_frames: int = 120
    """event-memory: an event is closed after this many frames even without a boundary."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> MemorySettings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            name = PREFIX + f.name.upper()
            text = env.get(name)
            if text:
                values[f.name] = _parse(name, text, type(getattr(cls(), f.name)))
        settings = cls(**values)  # type: ignore[arg-type]
        settings.check()
        return settings

    def check(self) -> None:
        for name in (
            "frames_per_block",
            "top_k",
            "key_frames",
            "caption_max_new_tokens",
            "max_event_frames",
        ):
            if getattr(self, name) < 1:
                raise VlmConfigError(
                    f"{PREFIX}{name.upper()}={getattr(self, name)!r}: give a positive number"
                )
        if not 0 < self.event_threshold < 2:
            raise VlmConfigError(
                f"{PREFIX}EVENT_THRESHOLD={self.event_threshold!r}: give a cosine distance "
                "between 0 and 2 (0.15 by default)"
            )

    def record(self, names: tuple[str, ...]) -> dict[str, str]:
        return {f"vlm.{name}": str(getattr(self, name)) for name in names}
