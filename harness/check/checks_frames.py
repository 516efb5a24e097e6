"""Frames in every declared encoding and every size the harness may send are accepted;
an undeclared encoding is refused."""

from __future__ import annotations

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.types import FrameEncoding, SessionEnd, SessionStart
from apmbench.harness.check import probes
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.expect import code_of, expect_error
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import SESSION_1
from apmbench.harness.check.verdicts import CheckFailed, NotApplicable, Passed
from apmbench.harness.synthetic.render import render


def frame_sizes(max_side: int) -> list[tuple[int, int]]:
    """Landscape, portrait and square at the declared side, and a landscape half as large.

    The harness keeps the video's aspect and never exceeds the declared side,
    so any of these can reach the system.
    """
    side = max_side or probes.DEFAULT_SIDE
    short = max(1, side * 3 // 4)
    half = max(2, side // 2)
    return [(side, short), (short, side), (side, side), (half, max(1, half * 3 // 4))]


@check("frames-encodings", "R8", "a frame in every declared encoding, at every size, is ingested")
def frames_encodings(ctx: CheckContext) -> Passed:
    info, client = ctx.info, ctx.client
    tid = ctx.fresh("frames")
    client.start_session(SessionStart(tid, "S1", "DAY1", 0))
    picture = render(SESSION_1.scene_at(0))
    refused = []
    sent = 0
    t = 0
    for encoding in info.capabilities.frame_encodings:
        for width, height in frame_sizes(info.capabilities.preferred_max_side):
            t += 1000
            stretched = probes.resize(picture, width, height)
            frame = probes.encode(stretched, t, encoding)
            try:
                pushed = client.push([frame])
            except errors.ProtocolError as e:
                refused.append(f"{encoding.value} {width}x{height}: {e.message}")
                continue
            sent += 1
            if pushed.frames != 1:
                refused.append(
                    f"{encoding.value} {width}x{height}: {pushed.frames} frames ingested"
                )
    client.end_session(SessionEnd("S1", t + 1000))
    if refused:
        raise CheckFailed(
            "frames the system declared it accepts were not ingested: " + "; ".join(refused),
            "accept every encoding listed in frame_encodings at any size up to "
            "preferred_max_side (the harness keeps the video's aspect ratio)",
        )
    return Passed(
        f"{sent} frames ingested", {"sizes": frame_sizes(info.capabilities.preferred_max_side)}
    )


@check(
    "frames-undeclared-encoding", "R8", "a frame in an encoding not declared is INVALID_ARGUMENT"
)
def frames_undeclared(ctx: CheckContext) -> Passed:
    declared = ctx.info.capabilities.frame_encodings
    others = [e for e in FrameEncoding if e not in declared]
    if not others:
        raise NotApplicable("the system declares every encoding the protocol has")
    client = ctx.client
    tid = ctx.fresh("undeclared")
    client.start_session(SessionStart(tid, "S1", "DAY1", 0))
    frame = probes.encode(probes.noise(32, 24, 1), 1000, others[0])
    expect_error(
        errors.InvalidArgument,
        f"a {others[0].value} frame to a system that declares only "
        + ", ".join(e.value for e in declared),
        lambda: client.push([frame]),
        f"answer {code_of(errors.InvalidArgument)} for an undeclared encoding (the SDK does)",
    )
    client.end_session(SessionEnd("S1", 2000))
    return Passed(f"{others[0].value} refused")


CHECKS = (frames_encodings, frames_undeclared)
