"""A synthetic session as a real H.264 video file."""

from __future__ import annotations

from pathlib import Path

import av

from apmbench.adapters.perception import layout
from apmbench.harness.synthetic.render import render
from apmbench.harness.synthetic.world import SessionPlan, apply


def write_video(path: Path, plan: SessionPlan, fps: int) -> None:
    """H.264 at `fps` with a GOP of exactly one second, so 1-FPS sampling needs key frames only."""
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height = layout.WIDTH, layout.HEIGHT
        stream.pix_fmt = "yuv420p"
        stream.options = {
            "g": str(fps),
            "keyint_min": str(fps),
            "sc_threshold": "0",
            "preset": "veryfast",
            "crf": "23",
            "bf": "0",
        }
        state = plan.opening.copy()
        events = list(plan.events)
        for second in range(plan.seconds):
            now = plan.start_ms + second * 1000
            while events and events[0].time_ms <= now:
                apply(state, events.pop(0))
            image = render(state.scene(now))
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            for _ in range(fps):
                for packet in stream.encode(frame):
                    out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
