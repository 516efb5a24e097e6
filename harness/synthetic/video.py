"""A synthetic session as a real H.264 video file."""

from __future__ import annotations

from pathlib import Path

import av
from av.video.reformatter import Interpolation, VideoReformatter

from apmbench.adapters.perception import layout
from apmbench.harness.synthetic.render import render
from apmbench.harness.synthetic.world import SessionPlan, apply

# The same bytes on every machine, so that a dataset generated on first use, and every
# recorded figure that depends on its frames (frame-archive's exported bytes), do not
# depend on the CPU that made it. Left to themselves, x264 picks its threads from the
# CPU count and its assembly from the CPU's features, and swscale's RGB-to-YUV
# conversion takes SIMD paths that are not bit-exact: the tiny dataset's videos came
# out different with one CPU than with two, and with the C paths forced (a CI machine
# once stored 6 bytes more frame-archive state than another for the same commit).
# Here x264 runs its C code in one thread and the conversion is swscale's bit-exact
# one; `test_synthetic_video.py` checks the bytes under both kinds of machine.
_X264_DETERMINISTIC = "asm=0:threads=1:lookahead-threads=1:sliced-threads=0"
_BITEXACT = Interpolation.BILINEAR | Interpolation.ACCURATE_RND | Interpolation.BITEXACT


def write_video(path: Path, plan: SessionPlan, fps: int) -> None:
    """H.264 at `fps` with a GOP of exactly one second, so 1-FPS sampling needs key frames only."""
    to_yuv = VideoReformatter()
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
            "threads": "1",
            "x264-params": _X264_DETERMINISTIC,
        }
        state = plan.opening.copy()
        events = list(plan.events)
        for second in range(plan.seconds):
            now = plan.start_ms + second * 1000
            while events and events[0].time_ms <= now:
                apply(state, events.pop(0))
            image = render(state.scene(now))
            frame = to_yuv.reformat(
                av.VideoFrame.from_ndarray(image, format="rgb24"),
                format="yuv420p",
                interpolation=_BITEXACT,
                threads=1,
            )
            for k in range(fps):
                # In the stream's time base (1/fps); PyAV numbers only the frames it converts.
                frame.pts = second * fps + k
                for packet in stream.encode(frame):
                    out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
