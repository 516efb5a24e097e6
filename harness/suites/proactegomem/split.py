"""ProactEgoMem's split: the public part keeps each clip's id, task, length and video, and each
question's id, wording, choices and category; the events (every time, object, state and
location of the intervention and notification ground truth), the answers and the generator
(its seed regenerates every label) stay in the private part.

A synthetic clip's render spec is a scene description that lists the events (when each
device is on, where each object lies, each panel's number), so the public part holds the
clip's pixels instead: the frames the renderer draws at the suite's 1 fps, in a lossless
H.264 (RGB, qp 0) video, which decodes to the very frames a run on the labelled dataset
sends (a test compares the reports).

Without the events, the Oracle Memory condition (which lists them to the system) cannot run
on a public part: the plan leaves it out there, and `score --labels` reports it as not run
(docs/blind-evaluation.md).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import av

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.frames import frame_times
from apmbench.harness.media.patched import pixels
from apmbench.harness.media.renderers import renderer_for
from apmbench.harness.media.timeline import Session
from apmbench.harness.suites import withheld
from apmbench.harness.suites.proactegomem.dataset import load_dataset, read_doc

PUBLIC_QUESTION_KEYS = ("question_id", "question", "choices", "category")
PUBLIC_CLIP_KEYS = ("clip_id", "task", "duration_s", "video")
"""What a run needs of a clip; everything else (events, render spec, any field a user
added) stays private."""
FPS = 1.0
"""The suite's step rate (section 5.2): the frames a run samples."""


def write_rendered(session: Session, out: Path) -> None:
    """The frames a run samples from the rendered `session`, as a lossless video at `out`."""
    assert session.render is not None
    times = frame_times(session, FPS)
    out.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(out), "w") as container:
        stream = container.add_stream("libx264rgb", rate=1, options={"qp": "0"})
        first = True
        rendered = renderer_for(session.render)(session.render, times)
        for t, rgb in zip(times, map(pixels, rendered), strict=True):
            if first:
                stream.height, stream.width = rgb.shape[:2]
                stream.pix_fmt = "rgb24"
                stream.time_base = Fraction(1, 1000)
                first = False
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts, frame.time_base = t - session.start_ms, Fraction(1, 1000)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def _clip(clip: Any, public: Path, sessions: dict[str, Session]) -> Any:
    if not isinstance(clip, dict):
        return clip
    questions = [
        {k: q[k] for k in PUBLIC_QUESTION_KEYS if k in q} if isinstance(q, dict) else q
        for q in clip.get("questions", []) or []
    ]
    out = {k: clip[k] for k in PUBLIC_CLIP_KEYS if k in clip}
    if "render" in clip:
        cid = str(clip["clip_id"])
        video = f"rendered/{cid}.mp4"
        if (public / video).exists():
            raise DatasetError(f"clip {cid!r}: two clips would render to {video}")
        write_rendered(sessions[cid], public / video)
        out["video"] = video
    return {**out, "questions": questions}


def split(root: Path, public: Path, private: Path) -> None:
    doc = read_doc(root)[2]
    if not isinstance(doc, dict) or doc.get("labels") == withheld.WITHHELD:
        raise DatasetError(f"{root} is already a public part, or not a dataset")
    sessions = {t.trajectory_id: t.sessions[0] for t in load_dataset(root).trajectories}
    kept = {k: v for k, v in doc.items() if k not in ("generator", "clips")}
    files = [
        c["video"]
        for c in doc.get("clips", []) or []
        if isinstance(c, dict) and isinstance(c.get("video"), str)
    ]
    withheld.copy_media(root, public, files)
    clips = [_clip(c, public, sessions) for c in doc.get("clips", []) or []]
    out_name = withheld.public_name(doc)
    withheld.write_doc(public, {**kept, **out_name, "labels": withheld.WITHHELD, "clips": clips})
    withheld.write_doc(private, doc)
