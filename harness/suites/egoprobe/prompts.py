"""What EgoProbe asks on the wire: a system prompt and one prompt per kind of turn.

Only the question, its options and the answer format are sent; target times,
related events and which options they support never leave the harness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from apmbench.adapters.sdk.types import Choice, Query
from apmbench.harness.scoring.answers import parse_choice

SYSTEM_PROMPT = (
    "You are a first-person streaming video assistant with a memory of what you have seen.\n\n"
    "Use only the video observed up to the current moment and your memory of it. Do not assume "
    "access to future video.\n\n"
    "Return exactly one valid JSON object in the requested format. Do not add markdown or text "
    "outside the JSON object."
)

YES_NO = (Choice("A", "Yes"), Choice("B", "No"))


def _choices(choices: Sequence[Choice]) -> str:
    return "\n".join(f"{c.option_id}. {c.text}" for c in choices)


def single(question: str, choices: Sequence[Choice]) -> str:
    return (
        "Recall what you observed earlier in the stream and answer the following "
        f"multiple-choice question.\n\nQuestion:\n{question}\n\nChoices:\n{_choices(choices)}"
        '\n\nReturn:\n{"answer":"A|B|C|D"}'
    )


def first_round(question: str) -> str:
    return (
        "Recall what you observed earlier in the stream and answer the following yes/no "
        f"question.\n\nQuestion:\n{question}\n\nChoices:\n{_choices(YES_NO)}"
        '\n\nReturn:\n{"answer":"A|B"}'
    )


SECOND_ROUND = "{earlier}\n\n" + (
    "This is a follow-up in the same conversation. Recall the specific event it asks about "
    "and answer the multiple-choice question.\n\nQuestion:\n{question}\n\nChoices:\n"
    '{choices}\n\nReturn:\n{{"answer":"A|B|C|D"}}'
)
EARLIER_TURN = "Earlier in this conversation I asked:\n{question}\nYou answered:\n{answer}"


def second_round(question: str, choices: Sequence[Choice]) -> str:
    """R2's prompt before its dialogue is known; `with_dialogue` fills in the earlier turn."""
    return SECOND_ROUND.format(
        earlier="(The earlier turn of this conversation comes with this query.)",
        question=question,
        choices=_choices(choices),
    )


def with_dialogue(query: Query) -> Query:
    """R2 quoting R1 and the system's actual answer in its prompt, for systems that read
    only the prompt (the same turns travel in the query's dialogue field)."""
    earlier = "\n\n".join(
        EARLIER_TURN.format(question=t.question, answer=t.answer) for t in query.dialogue
    )
    prompt = SECOND_ROUND.format(
        earlier=earlier, question=query.question, choices=_choices(query.choices)
    )
    return replace(query, prompt=prompt)


def said_yes(text: str) -> bool | None:
    """An R1 answer to `first_round` read as "yes" (True), "no" (False) or neither (None):
    R1's grading and the runner's choice to ask R2 read it alike, with no label."""
    parsed = parse_choice(text, [(c.option_id, c.text) for c in YES_NO])
    return parsed.option == "A" if parsed.option is not None else None
