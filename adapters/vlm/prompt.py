"""A prompt every backend understands: a system text, then text and video clips in order.

The systems build these from their memory; a backend turns them into its own
input (token ids and video patches, or chat-completions content parts).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from apmbench.adapters.sdk import Frame


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Clip:
    """Frames of one stretch of video, in time order, shown to the model as one video.

    Frame times are given to the model as seconds after `origin_ms` (the
    session's start), as Qwen-VL sees a video's own clock.
    """

    frames: tuple[Frame, ...]
    origin_ms: int

    def seconds(self) -> list[float]:
        return [(f.time_ms - self.origin_ms) / 1000 for f in self.frames]


Part = Text | Clip


@dataclass(frozen=True)
class Prompt:
    system: str
    parts: tuple[Part, ...]

    def clips(self) -> list[Clip]:
        return [p for p in self.parts if isinstance(p, Clip)]

    def frame_count(self) -> int:
        return sum(len(c.frames) for c in self.clips())


def cap_text(pieces: Iterator[str], limit: int) -> Iterator[str]:
    """Pass `pieces` through until `limit` characters (0 = no limit), then stop the source."""
    sent = 0
    try:
        for piece in pieces:
            if limit and sent + len(piece) >= limit:
                yield piece[: limit - sent]
                return
            sent += len(piece)
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()
