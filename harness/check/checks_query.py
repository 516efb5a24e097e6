"""Query: a stream of text in the expected format, read-only, and stoppable."""

from __future__ import annotations

import time

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.types import AnswerFormat, Query, QueryKind
from apmbench.harness.check import probes
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import PROBE_TIME_MS, SESSION_1, SESSION_2
from apmbench.harness.check.verdicts import CheckFailed, CheckWarning, NotApplicable, Passed
from apmbench.harness.protocol.client import QueryResult
from apmbench.harness.protocol.streaming import streaming_problem
from apmbench.harness.scoring.answers import (
    FAILURE,
    REPAIRED,
    ParsedDecision,
    parse_choice,
    parse_decision,
)
from apmbench.harness.wording import counted

FORMATS = {
    "multiple_choice": '{"answer":"A|B|C|D"}',
    "evidence_availability": '{"answer":"A|B|C|D|E"}',
    "decision": '{"decision":"SILENT"} or {"decision":"INTERVENE","proactive_response":"..."}',
    "decision_with_option": '{"decision":"SILENT"} or {"decision":"INTERVENE","answer":"A|B|C|D"}',
}
"""Each probe's answer format, by `label`; docs/PROTOCOL.md has their schemas."""


def label(query: Query) -> str:
    """The query's kind, or its answer format where the kind does not tell."""
    if query.answer_format is AnswerFormat.DECISION_WITH_OPTION:
        return str(query.answer_format.value)
    return str(query.kind.value)


def open_probe_session(ctx: CheckContext, label: str) -> str:
    """Session 1 played and ended, session 2 open with all its items pushed; the probe time next."""
    tid = ctx.fresh(label)
    probes.play(ctx.client, tid, SESSION_1, ctx.info)
    probes.start(ctx.client, tid, SESSION_2)
    ctx.client.push(probes.session_items(SESSION_2, ctx.info))
    return tid


def _probe_answers(ctx: CheckContext) -> list[tuple[Query, QueryResult]]:
    """The probe queries' answers, asked once and shared by the checks that only read them."""
    cached = ctx.memo.get("probe-answers")
    if cached is None:
        open_probe_session(ctx, "answers")
        queries = probes.probe_queries()
        cached = list(zip(queries, probes.ask(ctx.client, queries), strict=True))
        probes.end(ctx.client, SESSION_2)
        ctx.memo["probe-answers"] = cached
    answers: list[tuple[Query, QueryResult]] = cached
    return answers


@check("query-streams", "R11", "Query streams non-empty text chunks, each new text, first first")
def query_streams(ctx: CheckContext) -> Passed:
    problems = []
    seen = []
    for query, result in _probe_answers(ctx):
        problem = streaming_problem(result)
        if problem is not None:
            problems.append(f"{label(query)}: {problem}")
        seen.append(
            f"{label(query)} {counted(result.chunks, 'chunk')}, first after "
            f"{(result.ttft_s or 0) * 1000:.1f} ms of {result.total_s * 1000:.1f} ms"
        )
    if problems:
        raise CheckFailed(
            "; ".join(problems),
            "yield each new piece of the answer once, as it is produced (deltas, not the text "
            "so far), starting with real content: a first chunk of whitespace or of characters "
            "that render nothing (zero-width space, BOM, ...) is blank (R11)",
        )
    return Passed("; ".join(seen))


def _decision(query: Query, text: str) -> ParsedDecision:
    if query.answer_format is AnswerFormat.DECISION_WITH_OPTION:
        options = [(c.option_id, c.text) for c in probes.DELAYED_CHOICES]
        return parse_decision(text, options, needs_option=True)
    return parse_decision(text)


def format_problem(query: Query, text: str) -> str | None:
    """Why `text` is no answer of `query`'s kind, or None; repaired answers are noted."""
    if query.kind is QueryKind.DECISION:
        decision = _decision(query, text)
        status, reason = decision.status, decision.reason
    else:
        choice = parse_choice(text, [(c.option_id, c.text) for c in query.choices])
        status, reason = choice.status, choice.reason
    if status == FAILURE:
        return f"{reason}; the answer was {text[:160]!r}"
    return None


@check("query-format", "R12", "each answer format parses: 4, 5 options, decision, with option")
def query_format(ctx: CheckContext) -> Passed:
    problems = []
    repaired = []
    for query, result in _probe_answers(ctx):
        problem = format_problem(query, result.text)
        if problem is not None:
            problems.append(f"{label(query)}: {problem}")
            continue
        if query.kind is QueryKind.DECISION:
            status = _decision(query, result.text).status
        else:
            status = parse_choice(
                result.text, [(c.option_id, c.text) for c in query.choices]
            ).status
        if status == REPAIRED:
            repaired.append(label(query))
    if problems:
        raise CheckFailed(
            "; ".join(problems),
            "answer with exactly the JSON object the prompt asks for: "
            + "; ".join(f"{k}: {f}" for k, f in FORMATS.items())
            + " (QueryRequest.answer_format and answer_schema say which)",
        )
    if repaired:
        raise CheckWarning(
            f"R12: the answers to {', '.join(repaired)} were read only after repair (a Markdown "
            "fence or prose around the JSON object): runs count each as a format failure",
            "answer with exactly one JSON object, no fence and no words around it (R12)",
        )
    return Passed(f"all {len(FORMATS)} answer formats parsed")


@check("query-read-only", "R5", "the exported state is identical before and after queries")
def query_read_only(ctx: CheckContext) -> Passed:
    open_probe_session(ctx, "read-only")
    before = ctx.export()
    if ctx.export().data != before.data:
        raise NotApplicable(
            "two exports with nothing in between differ, so a change cannot be put down to "
            "Query (see export-deterministic)",
            "make export_state byte-identical for the same memory",
        )
    queries = probes.probe_queries()
    probes.ask(ctx.client, queries)
    after = ctx.export()
    probes.end(ctx.client, SESSION_2)
    if after.data != before.data:
        raise CheckFailed(
            f"the state changed across {len(queries)} queries: {before.manifest.total_bytes} "
            f"bytes (sha256 {before.manifest.sha256[:12]}) before, {after.manifest.total_bytes} "
            f"bytes (sha256 {after.manifest.sha256[:12]}) after",
            "query() must not change memory: work on a copy and keep per-query scratch "
            "(caches, counters, logs) out of the persistent state",
        )
    return Passed(f"{before.manifest.total_bytes} bytes unchanged across {len(queries)} queries")


CANCEL_FLOOR_S = 0.5
"""The least lag allowed after an abandoned query."""
CANCEL_MARGIN = 4.0
"""The lag allowed is at least this many times an unhindered push measured in the same check."""


def _follow_up(ctx: CheckContext, at_ms: int) -> float:
    """Seconds a small push takes right after a query was abandoned: the server's lag."""
    frame = probes.encode(probes.noise(32, 24, at_ms), at_ms, probes.probe_encoding(ctx.info))
    started = time.perf_counter()
    try:
        ctx.client.push([frame])
    except errors.ProtocolError as e:
        raise CheckFailed(
            f"after a query was abandoned, the next call failed: {e}",
            "a cancelled or timed-out Query must leave the server usable",
        ) from e
    return time.perf_counter() - started


@check("query-cancel", "CANCEL", "an abandoned Query stops its work; the server stays usable")
def query_cancel(ctx: CheckContext) -> Passed:
    open_probe_session(ctx, "cancel")
    question = probes.probe_queries()[0]
    base = ctx.client.query(probes.renewed(question))
    if not base.pieces:
        raise NotApplicable("the query streamed no text (see query-streams)")
    # Past the deadline: the client gives up after a quarter of a full answer's time.
    deadline = max(base.total_s / 4, 0.01)
    expired = False
    try:
        ctx.client.query(probes.renewed(question), timeout_s=deadline)
    except errors.DeadlineExceeded:
        expired = True
    lag_deadline = _follow_up(ctx, PROBE_TIME_MS + 100)
    # Mid-stream: the client cancels after the first chunk.
    ctx.client.query(probes.renewed(question, PROBE_TIME_MS + 100), cancel_after=1)
    lag_cancel = _follow_up(ctx, PROBE_TIME_MS + 200)
    remaining = base.total_s - (base.ttft_s or 0.0)
    final = ctx.client.query(probes.renewed(question, PROBE_TIME_MS + 200))
    # The same push with nothing abandoned: what this machine, loaded as it is now, makes a
    # push cost. The allowances scale with it, so that a busy CI host does not fail an
    # honest server; a server still working on an abandoned answer adds that work on top.
    idle = _follow_up(ctx, PROBE_TIME_MS + 300)
    floor = max(CANCEL_FLOOR_S, CANCEL_MARGIN * idle)
    allowed_deadline = max(floor, deadline + idle)
    allowed_cancel = max(floor, remaining / 4 + idle)
    probes.end(ctx.client, SESSION_2)
    measured = (
        f"a full answer takes {base.total_s:.3f} s (first chunk {base.ttft_s or 0:.3f} s); "
        f"after a {deadline:.3f} s deadline{' expired' if expired else ' (answered in time)'} the "
        f"next call waited {lag_deadline:.3f} s (allowed {allowed_deadline:.2f}); after a cancel "
        f"at the first chunk it waited {lag_cancel:.3f} s (allowed {allowed_cancel:.2f}); "
        f"with nothing abandoned a push takes {idle:.3f} s"
    )
    slow = lag_deadline > allowed_deadline or lag_cancel > allowed_cancel
    if slow:
        raise CheckFailed(
            "the server kept working on an abandoned query: " + measured,
            "stop work when the client goes away: yield pieces as they are produced (the SDK "
            "then closes your generator), and split long computations into steps that yield",
        )
    if not final.pieces:
        raise CheckFailed("after the abandoned queries, a query streamed no text: " + measured)
    return Passed(measured)


CHECKS = (query_streams, query_format, query_read_only, query_cancel)
