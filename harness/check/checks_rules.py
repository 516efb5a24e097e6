"""Rules of the .proto that only a malformed or ill-ordered call shows: R10's well-formed
items, EndSession of another session, a manifest's sha256, and the precedence of status
codes when one call breaks several rules."""

from __future__ import annotations

import hashlib

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.types import (
    Frame,
    FrameEncoding,
    SessionEnd,
    SessionStart,
    StateManifest,
)
from apmbench.harness.check import probes
from apmbench.harness.check.checks_lifecycle import _frame, _mc
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.expect import expect_error
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import SESSION_1
from apmbench.harness.check.verdicts import NotApplicable, Passed
from apmbench.harness.protocol.client import MALFORMED_ITEMS

_ITEM_HINTS = {
    "turn-without-kind": "refuse a user turn whose kind is USER_TURN_KIND_UNSPECIFIED",
    "turn-of-unknown-kind": "refuse a user turn whose kind is a value the protocol does not "
    "have (9): an unknown enum value counts as none",
    "frame-without-encoding": "refuse a frame whose encoding is FRAME_ENCODING_UNSPECIFIED",
    "empty-item": "refuse a StreamItem that carries neither a frame nor a user turn",
}
ITEM_SINCE = {"turn-of-unknown-kind": "1.3"}
"""Parts of R10 a later text added: an unknown enum value counts as none (1.3)."""


@check(
    "misuse-malformed-items",
    "R10",
    "a turn or Query without kind, an empty item: refused",
    since="1.1",
)
def malformed_items(ctx: CheckContext) -> Passed:
    client = ctx.client
    tid = ctx.fresh("malformed")
    client.start_session(SessionStart(tid, "S1", "DAY1", 1000))
    for n, what in enumerate(MALFORMED_ITEMS, start=1):
        expect_error(
            errors.InvalidArgument,
            f"PushFrames with one {what.replace('-', ' ')}",
            lambda what=what, n=n: client.push_malformed(what, 1000 + n),  # type: ignore[misc]
            _ITEM_HINTS[what] + " with INVALID_ARGUMENT (R10)",
            since=ITEM_SINCE.get(what, ""),
        )
    expect_error(
        errors.InvalidArgument,
        "Query with kind QUERY_KIND_UNSPECIFIED",
        lambda: client.query_without_kind(_mc(5000)),
        "refuse a Query without a kind with INVALID_ARGUMENT (R10)",
    )
    expect_error(
        errors.InvalidArgument,
        "Query with kind 9 (no version of the protocol has it)",
        lambda: client.query_without_kind(_mc(5000), unknown=True),
        "refuse a Query whose kind you do not know with INVALID_ARGUMENT (R10)",
        since="1.3",
    )
    seen = f"{len(MALFORMED_ITEMS)} malformed items, a Query without kind and one of kind 9"
    if FrameEncoding.JPEG in ctx.info.capabilities.frame_encodings:
        expect_error(
            errors.InvalidArgument,
            "a JPEG frame whose data does not begin with the SOI marker FF D8",
            lambda: client.push([Frame(5500, FrameEncoding.JPEG, 2, 2, b"not a jpeg")]),
            "refuse a JPEG frame whose data does not start with FF D8 with INVALID_ARGUMENT (R10)",
            since="1.3",
        )
        seen += ", a JPEG without its SOI marker"
    client.push([_frame(ctx, 6000)])  # the session is still usable
    client.end_session(SessionEnd("S1", 7000))
    expect_error(
        errors.InvalidArgument,
        "StartSession with an empty session_id",
        lambda: client.start_session(SessionStart(tid, "", "DAY1", 8000)),
        "refuse StartSession with an empty session_id with INVALID_ARGUMENT (R10)",
    )
    # The other ids are informational: empty ones are never refused (R10).
    client.reset("")
    client.start_session(SessionStart("", "S2", "", 9000))
    client.end_session(SessionEnd("S2", 9500))
    return Passed(
        seen + " refused; an empty session_id refused; empty trajectory and day ids accepted"
    )


@check(
    "misuse-end-other-session",
    "SESSION-ID",
    "EndSession naming another session: refused",
    since="1.1",
)
def end_other_session(ctx: CheckContext) -> Passed:
    client = ctx.client
    tid = ctx.fresh("end-other")
    client.start_session(SessionStart(tid, "S1", "DAY1", 1000))
    expect_error(
        errors.InvalidArgument,
        "EndSession('S2') while session S1 is open",
        lambda: client.end_session(SessionEnd("S2", 2000)),
        "compare EndSession's session_id with the open session's and answer INVALID_ARGUMENT",
    )
    # The refused EndSession must leave S1 open: a push is accepted, S1 ends.
    expect_error(
        errors.FailedPrecondition,
        "StartSession('S3') right after the refused EndSession (S1 must still be open)",
        lambda: client.start_session(SessionStart(tid, "S3", "DAY1", 2500)),
        "a refused EndSession must not close the open session",
    )
    client.push([_frame(ctx, 3000)])
    client.end_session(SessionEnd("S1", 4000))
    return Passed("refused; S1 stayed open and then ended")


@check(
    "misuse-import-bad-manifest",
    "MANIFEST",
    "a manifest sha256 not of 64 hex digits: refused",
    since="1.1",
)
def import_bad_manifest(ctx: CheckContext) -> Passed:
    ctx.require_import()
    client = ctx.client
    tid = ctx.fresh("bad-manifest")
    probes.play(client, tid, SESSION_1, ctx.info)
    state = ctx.export()
    m = state.manifest
    digest = hashlib.sha256(state.data).hexdigest()
    for bad, how in ((digest[:63], "63 hex digits"), (digest.upper(), "upper-case hex")):
        expect_error(
            errors.InvalidArgument,
            f"ImportState whose manifest sha256 is {how}",
            lambda bad=bad: client.import_raw(  # type: ignore[misc]
                StateManifest(m.total_bytes, bad, m.content_type, m.format_version), [state.data]
            ),
            "refuse a manifest whose sha256 is not exactly 64 characters of [0-9a-f] with "
            "INVALID_ARGUMENT",
        )
    client.import_raw(m, [state.data])  # the well-formed manifest still imports
    return Passed("63 digits and upper case refused; the right manifest imported")


@check(
    "status-precedence",
    "PRECEDENCE",
    "a call breaking several rules gets the first code of the .proto's order",
    since="1.1",
)
def status_precedence(ctx: CheckContext) -> Passed:
    client = ctx.client
    tid = ctx.fresh("precedence")
    expect_error(
        errors.FailedPrecondition,
        "a Query without kind (INVALID_ARGUMENT) outside a session (FAILED_PRECONDITION)",
        lambda: client.query_without_kind(_mc(1000)),
        "check the lifecycle (FAILED_PRECONDITION) before the request's fields",
    )
    client.start_session(SessionStart(tid, "S1", "DAY1", 2000))
    expect_error(
        errors.FailedPrecondition,
        "StartSession with an empty session_id (INVALID_ARGUMENT) while S1 is open "
        "(FAILED_PRECONDITION)",
        lambda: client.start_session(SessionStart(tid, "", "DAY1", 3000)),
        "check that no session is open before checking StartSession's fields",
    )
    client.end_session(SessionEnd("S1", 4000))
    seen = ["Query", "StartSession"]
    if not ctx.info.capabilities.supports_import:
        expect_error(
            errors.Unimplemented,
            "ImportState without a manifest (INVALID_ARGUMENT) on a system without import "
            "(UNIMPLEMENTED)",
            lambda: client.import_raw(None, [b"x"]),
            "answer UNIMPLEMENTED before reading an ImportState stream",
        )
        seen.append("ImportState")
    else:
        client.start_session(SessionStart(tid, "S2", "DAY1", 5000))
        expect_error(
            errors.FailedPrecondition,
            "ImportState without a manifest (INVALID_ARGUMENT) while a session is open "
            "(FAILED_PRECONDITION)",
            lambda: client.import_raw(None, [b"x"]),
            "refuse ImportState in a session before reading its stream",
        )
        client.end_session(SessionEnd("S2", 6000))
        seen.append("ImportState")
    if not seen:
        raise NotApplicable("nothing to test")
    return Passed(f"{', '.join(seen)}: the earlier code in the order was answered")


CHECKS = (malformed_items, end_other_session, import_bad_manifest, status_precedence)
