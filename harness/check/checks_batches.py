"""PushItemBatches (R13, protocol 1.2): a server that declares it takes batched items
exactly as PushFrames takes them one per message."""

from __future__ import annotations

from collections.abc import Sequence

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.types import Frame, StreamItem
from apmbench.harness.check import probes
from apmbench.harness.check.checks_lifecycle import _frame
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.expect import expect_error
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import SESSION_1
from apmbench.harness.check.verdicts import CheckFailed, Passed

HINT = (
    "take each batch's items in order through the same code as PushFrames' items (the Python "
    "SDK's server does), or do not declare accepts_item_batches"
)


def _outcome(ctx: CheckContext, items: Sequence[StreamItem], batched: bool, limit: int) -> str:
    """What pushing `items` at the start of a fresh session gives: the counts, or the error."""
    probes.start(ctx.client, ctx.fresh("batches"), SESSION_1)
    try:
        pushed = ctx.client.push(items, batched=batched, batch_bytes=limit)
        return f"{pushed.frames} frames and {pushed.user_turns} user turns ingested"
    except errors.ProtocolError as e:
        return f"{type(e).__name__} ({e.message})"
    finally:
        probes.end(ctx.client, SESSION_1)


@check(
    "push-batches",
    "R13",
    "items in PushItemBatches are ingested as PushFrames ingests them",
    since="1.2",
)
def push_batches(ctx: CheckContext) -> Passed:
    """The same item sequences through PushFrames and through PushItemBatches, each on a
    fresh trajectory, must come out the same. Compared with the server's own PushFrames, not
    with the rules: a server that breaks R2 in both is blamed by R2's check alone."""
    if not ctx.info.capabilities.accepts_item_batches:
        # R13: undeclared, the method answers UNIMPLEMENTED (gRPC's answer for a method a
        # server does not register); the harness then pushes through PushFrames.
        probes.start(ctx.client, ctx.fresh("no-batches"), SESSION_1)
        try:
            expect_error(
                errors.Unimplemented,
                "PushItemBatches to a server that does not declare accepts_item_batches",
                lambda: ctx.client.push([_frame(ctx, SESSION_1.start_ms)], batched=True),
                "do not register PushItemBatches unless you declare accepts_item_batches (gRPC "
                "then answers UNIMPLEMENTED), or declare it",
                since="1.3",
            )
        finally:
            probes.end(ctx.client, SESSION_1)
        return Passed("not declared, and PushItemBatches answered UNIMPLEMENTED: PushFrames used")
    items = probes.session_items(SESSION_1, ctx.info)
    # Batches of about two frames: several batches, each of several items.
    limit = 2 * max(len(i.data) for i in items if isinstance(i, Frame))
    t = SESSION_1.start_ms
    backwards = [_frame(ctx, t + 1000), _frame(ctx, t + 3000), _frame(ctx, t + 2000)]
    differences = []
    for label, sequence in (("a session's items", items), ("a frame going back", backwards)):
        one, batched = (_outcome(ctx, sequence, b, limit) for b in (False, True))
        # The error's words may name the call; its kind may not differ.
        if one.split(" (")[0] != batched.split(" (")[0]:
            differences.append(f"{label}: PushFrames {one}, PushItemBatches {batched}")
    if differences:
        raise CheckFailed("; ".join(differences), HINT)
    return Passed(
        f"{len(items)} items, and a frame going back, in batches of about two frames: "
        "the same outcome as one per PushFrames message"
    )


CHECKS = (push_batches,)
