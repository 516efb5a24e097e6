"""A round trip on a throwaway trajectory before real work: health is not readiness.

Triton answered healthy while its Python worker was dead
(triton-inference-server/server#7230); a server that reports SERVING may
still fail its first real call. The canary runs Describe, then Reset,
StartSession, one frame, a Query and EndSession, so a broken image fails
here, with its logs at hand, rather than in the middle of the first
trajectory. The runner resets the system before each trajectory, so nothing
of the canary reaches the evaluation.
"""

from __future__ import annotations

import numpy as np
import simplejpeg

from apmbench.adapters.sdk.types import (
    Choice,
    Frame,
    FrameEncoding,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    SystemInfo,
)
from apmbench.harness.protocol.client import SystemClient

TRAJECTORY = "apmbench-canary"
SESSION = "canary"


def canary_frame(info: SystemInfo) -> Frame:
    """A small grey frame in an encoding the system accepts (raw when it can take it)."""
    width, height = 64, 48
    pixels = np.full((height, width, 3), 128, dtype=np.uint8)
    if FrameEncoding.RGB24 in info.capabilities.frame_encodings:
        return Frame(0, FrameEncoding.RGB24, width, height, pixels.tobytes())
    data = simplejpeg.encode_jpeg(pixels, quality=90, colorspace="RGB")
    return Frame(0, FrameEncoding.JPEG, width, height, bytes(data))


def run_canary(client: SystemClient) -> SystemInfo:
    """Describe and one tiny session; raises the client's errors. Returns the description."""
    info = client.describe()
    client.reset(TRAJECTORY)
    client.start_session(SessionStart(TRAJECTORY, SESSION, "DAY1", 0))
    client.push([canary_frame(info)])
    client.query(
        Query(
            query_id="canary",
            time_ms=500,
            kind=QueryKind.MULTIPLE_CHOICE,
            system_prompt="This is a start-up check; any answer will do.",
            prompt="Answer with one option letter.",
            question="Is the picture grey?",
            choices=(Choice("A", "yes"), Choice("B", "no")),
        )
    )
    client.end_session(SessionEnd(SESSION, 1000))
    return info
