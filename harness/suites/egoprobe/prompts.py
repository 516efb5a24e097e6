"""What EgoProbe asks on the wire: a system prompt and one prompt per kind of turn.

Only the question, its options and the answer format are sent; target times,
related events and which options they support never leave the harness.
"""

from __future__ import annotations

from collections.abc import Sequence

from apmbench.adapters.sdk.types import Choice

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


def second_round(question: str, choices: Sequence[Choice]) -> str:
    return (
        "This is a follow-up in the same conversation: the earlier question and your answer "
        "to it come with this query. Recall the specific event it asks about and answer the "
        f"multiple-choice question.\n\nQuestion:\n{question}\n\nChoices:\n{_choices(choices)}"
        '\n\nReturn:\n{"answer":"A|B|C|D"}'
    )
