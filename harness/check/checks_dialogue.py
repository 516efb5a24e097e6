"""Dialogue (protocol 1.1): a follow-up that carries the earlier turn is answered, and read-only."""

from __future__ import annotations

from dataclasses import replace

from apmbench.adapters.sdk.types import Choice, DialogueTurn, QueryKind
from apmbench.harness.check import probes
from apmbench.harness.check.checks_query import format_problem, open_probe_session
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import SESSION_2
from apmbench.harness.check.verdicts import CheckFailed, NotApplicable, Passed

YES_NO = (Choice("A", "Yes"), Choice("B", "No"))
FIRST = "Did I put something down at the DESK?"


@check(
    "query-dialogue",
    "DIALOGUE",
    "a follow-up carrying the earlier turn and its actual answer parses and changes no state",
    since="1.1",
)
def query_dialogue(ctx: CheckContext) -> Passed:
    open_probe_session(ctx, "dialogue")
    before = ctx.export()
    if ctx.export().data != before.data:
        raise NotApplicable(
            "two exports with nothing in between differ, so a change cannot be put down to "
            "the dialogue (see export-deterministic)",
            "make export_state byte-identical for the same memory",
        )
    first = probes.query(
        QueryKind.MULTIPLE_CHOICE,
        f"Answer yes or no.\n\nQuestion:\n{FIRST}\n\nChoices:\nA. Yes\nB. No\n\n"
        'Return:\n{"answer":"A|B"}',
        FIRST,
        YES_NO,
    )
    r1 = ctx.client.query(first)
    if (problem := format_problem(first, r1.text)) is not None:
        probes.end(ctx.client, SESSION_2)
        raise NotApplicable(
            f"R1 itself does not parse ({problem}): a matter of query-format, and a follow-up "
            "needs a parsed first round",
            "answer every query in the format its prompt and answer_format ask for",
        )
    if ctx.export().data != before.data:
        probes.end(ctx.client, SESSION_2)
        raise NotApplicable(
            "a single query already changed the state (see query-read-only), so a change "
            "cannot be put down to the dialogue",
            "query() must not change memory",
        )
    base = next(q for q in probes.probe_queries() if q.kind is QueryKind.MULTIPLE_CHOICE)
    follow = replace(
        probes.renewed(base, first.time_ms),
        dialogue=(DialogueTurn(first.prompt, first.question, r1.text),),
    )
    r2 = ctx.client.query(follow)
    after = ctx.export()
    probes.end(ctx.client, SESSION_2)
    if (problem := format_problem(follow, r2.text)) is not None:
        raise CheckFailed(
            f"R2: {problem}",
            'answer each round with the JSON the prompt asks for ({"answer":"A|B"} for a '
            "yes/no round); the dialogue field only adds context",
        )
    if after.data != before.data:
        raise CheckFailed(
            f"the exported state changed across a two-round dialogue ({len(before.data)} -> "
            f"{len(after.data)} bytes)",
            "answer each round on an isolated branch: a dialogue's turns are context for the "
            "query that carries them, never memory",
        )
    return Passed(f"R1 and a follow-up quoting R1's answer both parsed; state unchanged "
                  f"({len(before.data)} bytes)")  # fmt: skip


CHECKS = (query_dialogue,)
