"""The session lifecycle in order, and each misuse answered with its documented status code."""

from __future__ import annotations

import hashlib

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.clock import MS_PER_DAY
from apmbench.adapters.sdk.types import (
    Frame,
    Query,
    SessionEnd,
    SessionStart,
    StateManifest,
    UserTurn,
)
from apmbench.harness.check import probes
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.expect import expect_error
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import SESSION_1, SESSION_2
from apmbench.harness.check.verdicts import CheckFailed, NotApplicable, Passed

SDK_HINT = (
    "check the lifecycle before method code runs, as docs/PROTOCOL.md's rules R2 and R3 say "
    "(the Python SDK's server does it for you: serve with apmbench.adapters.sdk)"
)


def _frame(ctx: CheckContext, time_ms: int) -> Frame:
    info = ctx.info
    side = min(info.capabilities.preferred_max_side or 64, 64)
    return probes.encode(
        probes.noise(side, side * 3 // 4, time_ms), time_ms, probes.probe_encoding(info)
    )


def _mc(time_ms: int) -> Query:
    q = probes.probe_queries()[0]
    return probes.query(q.kind, q.prompt, q.question, q.choices, time_ms=time_ms)


@check("lifecycle", "R3", "Reset, two sessions with frames, turns and queries, EndSession, export")
def lifecycle(ctx: CheckContext) -> Passed:
    info, client = ctx.info, ctx.client
    tid = ctx.fresh("lifecycle")
    counted = 0
    for script in (SESSION_1, SESSION_2):
        items = probes.session_items(script, info)
        probes.start(client, tid, script)
        half = len(items) // 2
        # Two PushFrames calls per session: a session's items may span several calls.
        for part in (items[:half], items[half:]):
            pushed = client.push(part)
            frames = sum(isinstance(i, Frame) for i in part)
            turns = sum(isinstance(i, UserTurn) for i in part)
            if (pushed.frames, pushed.user_turns) != (frames, turns):
                raise CheckFailed(
                    f"PushFrames with {frames} frames and {turns} user turns reported "
                    f"{pushed.frames} frames and {pushed.user_turns} turns ingested (R4: it "
                    "returns when every item is ingested)",
                    "count every item of the stream in PushFramesResponse",
                )
            counted += frames + turns
        answer = client.query(_mc(script.end_ms - 500))
        if not answer.text:
            raise CheckFailed(
                f"Query in session {script.session_id} streamed no text",
                "yield the answer text from query()",
            )
        probes.end(client, script)
        ctx.export()
    return Passed(f"2 sessions, {counted} items, a query in each, exports after each")


@check("misuse-push-outside-session", "R3", "PushFrames outside a session is FAILED_PRECONDITION")
def push_outside_session(ctx: CheckContext) -> Passed:
    client = ctx.client
    tid = ctx.fresh("push-outside")
    expect_error(
        errors.FailedPrecondition,
        "PushFrames after Reset, before any StartSession",
        lambda: client.push([_frame(ctx, 1000)]),
        SDK_HINT,
    )
    client.start_session(SessionStart(tid, "S1", "DAY1", 1000))
    client.push([_frame(ctx, 2000)])
    client.end_session(SessionEnd("S1", 3000))
    expect_error(
        errors.FailedPrecondition,
        "PushFrames after EndSession",
        lambda: client.push([_frame(ctx, 4000)]),
        SDK_HINT,
    )
    return Passed("refused before the first session and after EndSession")


@check("misuse-query-before-session", "R3", "Query before any session is FAILED_PRECONDITION")
def query_before_session(ctx: CheckContext) -> Passed:
    ctx.fresh("query-before")
    expect_error(
        errors.FailedPrecondition,
        "Query after Reset, before any StartSession",
        lambda: ctx.client.query(_mc(1000)),
        SDK_HINT,
    )
    return Passed("refused")


@check("misuse-session-order", "R3", "EndSession without a session, a second StartSession: refused")
def session_order(ctx: CheckContext) -> Passed:
    client = ctx.client
    tid = ctx.fresh("order")
    expect_error(
        errors.FailedPrecondition,
        "EndSession with no open session",
        lambda: client.end_session(SessionEnd("S1", 1000)),
        SDK_HINT,
    )
    client.start_session(SessionStart(tid, "S1", "DAY1", 1000))
    expect_error(
        errors.FailedPrecondition,
        "StartSession while session S1 is open",
        lambda: client.start_session(SessionStart(tid, "S2", "DAY1", 2000)),
        SDK_HINT,
    )
    client.push([_frame(ctx, 2000)])  # still usable
    client.end_session(SessionEnd("S1", 3000))
    return Passed("both refused; the open session went on")


@check(
    "misuse-time-backwards",
    "R2",
    "an item, a query or a session earlier than the last (a Query included): refused",
)
def time_backwards(ctx: CheckContext) -> Passed:
    client = ctx.client
    tid = ctx.fresh("time")
    client.start_session(SessionStart(tid, "S1", "DAY1", 10_000))
    expect_error(
        errors.InvalidArgument,
        "a PushFrames stream whose third frame (12 s) is earlier than its second (13 s)",
        lambda: client.push([_frame(ctx, 11_000), _frame(ctx, 13_000), _frame(ctx, 12_000)]),
        "compare each item's time_ms with the previous one and answer INVALID_ARGUMENT",
    )
    expect_error(
        errors.InvalidArgument,
        "Query at 12.5 s after a frame at 13 s",
        lambda: client.query(_mc(12_500)),
        "a Query carries a time too: refuse one earlier than the last item",
    )
    client.push([_frame(ctx, 14_000)])  # the session goes on at a later time
    client.query(_mc(15_000))
    expect_error(
        errors.InvalidArgument,
        "a frame at 14.5 s after a Query at 15 s",
        lambda: client.push([_frame(ctx, 14_500)]),
        "a Query moves the clock like any timed call (R2): refuse an item earlier than it",
        since="1.3",
    )
    client.push([_frame(ctx, 15_000)])
    client.end_session(SessionEnd("S1", 20_000))
    expect_error(
        errors.InvalidArgument,
        "StartSession at 19 s after EndSession at 20 s",
        lambda: client.start_session(SessionStart(tid, "S2", "DAY1", 19_000)),
        "time order holds across sessions until Reset or ImportState",
    )
    return Passed(
        "frames, Query, a frame earlier than a Query and StartSession going backwards were refused"
    )


def _manifest(
    data: bytes,
    content_type: str,
    format_version: int,
    *,
    size: int | None = None,
    digest: str | None = None,
) -> StateManifest:
    return StateManifest(
        len(data) if size is None else size,
        hashlib.sha256(data).hexdigest() if digest is None else digest,
        content_type,
        format_version,
    )


@check("misuse-import-undeclared", "R8", "ImportState on a system without import: UNIMPLEMENTED")
def import_undeclared(ctx: CheckContext) -> Passed:
    if ctx.info.capabilities.supports_import:
        raise NotApplicable("the system declares supports_import = true")
    ctx.fresh("no-import")
    state = ctx.export()
    expect_error(
        errors.Unimplemented,
        "ImportState of the system's own export",
        lambda: ctx.client.import_raw(
            _manifest(state.data, state.manifest.content_type, state.manifest.format_version),
            [state.data],
        ),
        "answer UNIMPLEMENTED when supports_import is false (the SDK does)",
    )
    return Passed("refused with UNIMPLEMENTED")


@check(
    "misuse-import-malformed",
    "STATUS",
    "ImportState: no manifest, wrong length or sha256, in a session",
)
def import_malformed(ctx: CheckContext) -> Passed:
    ctx.require_import()
    client = ctx.client
    tid = ctx.fresh("bad-import")
    probes.play(client, tid, SESSION_1, ctx.info)
    state = ctx.export()
    kind, version = state.manifest.content_type, state.manifest.format_version
    data = state.data
    expect_error(
        errors.InvalidArgument,
        "ImportState whose first chunk is data, not the manifest",
        lambda: client.import_raw(None, [data or b"x"]),
        "read the first chunk as the manifest and refuse anything else",
    )
    expect_error(
        errors.DataLoss,
        "ImportState announcing one byte more than it sends",
        lambda: client.import_raw(_manifest(data, kind, version, size=len(data) + 1), [data]),
        "compare the bytes received with the manifest's total_bytes",
    )
    expect_error(
        errors.DataLoss,
        "ImportState whose data does not match the manifest's sha256",
        lambda: client.import_raw(_manifest(data, kind, version, digest="0" * 64), [data]),
        "compare the sha256 of the bytes received with the manifest's",
    )
    client.start_session(SessionStart(tid, "S9", "DAY9", 9 * MS_PER_DAY))
    expect_error(
        errors.FailedPrecondition,
        "ImportState while a session is open",
        lambda: client.import_raw(_manifest(data, kind, version), [data]),
        "refuse ImportState until EndSession",
    )
    client.end_session(SessionEnd("S9", 9 * MS_PER_DAY + 1000))
    client.import_raw(_manifest(data, kind, version), [data])  # and a good one still works
    return Passed("INVALID_ARGUMENT, DATA_LOSS twice and FAILED_PRECONDITION as documented")


CHECKS = (
    lifecycle,
    push_outside_session,
    query_before_session,
    session_order,
    time_backwards,
    import_undeclared,
    import_malformed,
)
