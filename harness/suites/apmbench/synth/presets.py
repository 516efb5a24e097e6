"""Sizes of the synthetic benchmark."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    trajectories: int
    sessions: int
    session_seconds: int
    per_task: int
    """Candidates of each task per trajectory (fewer when the events do not allow more)."""
    video_fps: int = 2
    """Frames per second of the written video; its GOP is one second."""
    stored_video: bool = True
    """False: sessions carry a render spec and frames are rendered on the fly."""
    description: str = ""


PRESETS = {
    p.name: p
    for p in (
        Preset("tiny", 1, 4, 60, 1, description="tests: seconds end to end"),
        Preset("small", 3, 4, 120, 4, description="the demo: a few minutes of CPU"),
        Preset(
            "paper",
            104,
            5,
            780,
            2,
            stored_video=False,
            description="the paper's shape (104 trajectories, 5 x 13 min sessions), rendered live",
        ),
    )
}
