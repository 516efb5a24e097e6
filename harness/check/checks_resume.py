"""Resumed sessions (R14, protocol 1.3): a server that declares `resumes_sessions` exports
the open session with its memory, and after ImportState of that state in a fresh process the
session goes on as if nothing had happened. The harness relies on it to start a fork from a
snapshot taken in the middle of a session instead of replaying the session from its start,
so the check compares exactly those two paths: their answers and their final memory."""

from __future__ import annotations

import io
from dataclasses import dataclass

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.types import StreamItem, UserTurn
from apmbench.harness.check import probes
from apmbench.harness.check.checks_state import first_difference
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import SESSION_1, SESSION_2
from apmbench.harness.check.verdicts import CheckFailed, NotApplicable, Passed

HINT = (
    "export, while a session is open, everything the system keeps of that session (the Python "
    "SDK's server adds the session and its clock), and continue it on import; or do not "
    "declare resumes_sessions (the harness then replays the session)"
)


@dataclass(frozen=True)
class _Path:
    answers: list[str]
    state: bytes


def _split(items: list[StreamItem]) -> int:
    """Just before session 2's second user turn: a turn on each side, and frames too."""
    turns = [k for k, item in enumerate(items) if isinstance(item, UserTurn)]
    return turns[1] if len(turns) > 1 else len(items) // 2


def _run(ctx: CheckContext, items: list[StreamItem], split: int | None) -> _Path:
    """Session 1, then session 2 (split: exported open after `split` items, imported into a
    fresh process where the runtime can restart, else after Reset), the probe queries at its
    end, EndSession, and the final export."""
    tid = ctx.fresh("resume")
    probes.play(ctx.client, tid, SESSION_1, ctx.info)
    probes.start(ctx.client, tid, SESSION_2)
    if split is None:
        ctx.client.push(items)
    else:
        ctx.client.push(items[:split])
        mid = ctx.export()
        client = ctx.restart() if ctx.runtime.can_restart else ctx.client
        client.reset(f"{tid}-resumed")
        client.import_state(mid.manifest, io.BytesIO(mid.data))
        try:
            ctx.client.push(items[split:])
        except errors.ProtocolError as e:
            raise CheckFailed(
                f"after ImportState of a state exported in session {SESSION_2.session_id!r}, "
                f"pushing the rest of that session failed: {type(e).__name__} ({e.message})",
                HINT,
            ) from e
    answers = [r.text for r in probes.ask(ctx.client, probes.probe_queries())]
    probes.end(ctx.client, SESSION_2)
    return _Path(answers, ctx.export().data)


@check(
    "resume-session",
    "R14",
    "a session exported open and imported in a fresh process answers as the uninterrupted one",
    since="1.3",
)
def resume_session(ctx: CheckContext) -> Passed:
    if not ctx.info.capabilities.resumes_sessions:
        raise NotApplicable(
            "the server does not declare resumes_sessions: the harness replays forks' sessions"
        )
    ctx.require_import()
    items = probes.session_items(SESSION_2, ctx.info)
    split = _split(items)
    whole = _run(ctx, items, None)
    if _run(ctx, items, None) != whole:
        raise NotApplicable(
            "the same session played twice gave other answers or another memory, so they "
            "cannot show what resuming lost",
            "answer deterministically (greedy decoding, fixed seeds) to have R14 checked",
        )
    resumed = _run(ctx, items, split)
    differences = [
        f"query {k}: {a!r} uninterrupted, {b!r} resumed"
        for k, (a, b) in enumerate(zip(whole.answers, resumed.answers, strict=True))
        if a != b
    ]
    if resumed.state != whole.state:
        differences.append(
            "the memory exported after EndSession differs: "
            + first_difference(whole.state, resumed.state)
        )
    if differences:
        raise CheckFailed("; ".join(differences), HINT)
    where = "a fresh process" if ctx.runtime.can_restart else "the same process after Reset"
    return Passed(
        f"session 2 exported open after {split} of {len(items)} items and imported in {where}: "
        f"the same {len(whole.answers)} answers and the same final memory "
        f"({len(whole.state)} bytes)"
    )


CHECKS = (resume_session,)
