"""What plays when: sessions of video on the trajectory clock and the user turns injected into them.

Every suite loads its dataset into these, and the runner and the frame
producer read only these, so a suite never needs its own playback code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from apmbench.adapters.sdk.types import UserTurnKind
from apmbench.harness.json_types import JSON


@dataclass(frozen=True)
class Session:
    session_id: str
    day_id: str
    start_ms: int
    end_ms: int
    video: Path | None
    render: Mapping[str, JSON] | None = None
    """Instead of a video: a synthetic renderer's spec for this session's frames."""
    intervening: bool = False
    """A recording between two of the trajectory's sessions that no question refers to,
    present only where a suite's variant adds the video recorded between them."""

    @property
    def duration_s(self) -> float:
        return (self.end_ms - self.start_ms) / 1000.0


@dataclass(frozen=True)
class Trajectory:
    trajectory_id: str
    title: str
    sessions: tuple[Session, ...]

    def session_index(self, session_id: str) -> int:
        for i, s in enumerate(self.sessions):
            if s.session_id == session_id:
                return i
        raise KeyError(session_id)


@dataclass(frozen=True)
class Turn:
    """A user turn the harness injects at `time_ms` (in `session_index`)."""

    session_index: int
    time_ms: int
    kind: UserTurnKind
    text: str
