"""Deterministic repair (APM-Bench appendix B.5) reads only what is unambiguous.

One table of real-looking model outputs per answer kind, each with the parse
it must give. A row whose expected parse is a failure is output from which no
unambiguous task output can be recovered: two options, an article read as a
letter, a decision word under negation, contradicting fields.
"""

from __future__ import annotations

import pytest

from apmbench.harness.scoring.answers import CLEAN, FAILURE, REPAIRED, parse_choice, parse_decision

# Option texts with articles in them, so that "a"/"A" in prose is tempting.
CHOICES = [("A", "a red mug"), ("B", "cup"), ("C", "the kettle"), ("D", "nothing")]
EA = [*CHOICES, ("E", "It is not yet appropriate to answer")]

MC_TABLE: list[tuple[str, str | None, str]] = [
    # JSON as the prompt asks, and JSON a little off.
    ('{"answer":"A"}', "A", CLEAN),
    ('{"answer": "D"}', "D", CLEAN),
    ('{"answer":"a"}', "A", REPAIRED),
    ('{"answer": "b"}', "B", REPAIRED),
    ('```json\n{"answer": "C"}\n```', "C", REPAIRED),
    ('```\n{"answer":"B"}\n```', "B", REPAIRED),
    ('Here is my answer:\n{"answer": "D"}', "D", REPAIRED),
    ('{"answer": "(C)"}', "C", REPAIRED),
    ('{"answer": "Option B"}', "B", REPAIRED),
    ('{"answer": "B. cup"}', "B", REPAIRED),
    ('{"answer": "cup"}', "B", REPAIRED),
    ('{"answer": "The kettle"}', "C", REPAIRED),
    ('{"answer": "The answer is C"}', "C", REPAIRED),
    ('{"answer": "a red mug"}', "A", REPAIRED),
    ('{"answer":"C","reason":"a kettle sits on a stove"}', "C", CLEAN),
    # JSON that names nothing, or two things.
    ('{"answer": "B. a red mug"}', None, FAILURE),
    ('{"answer": "A or B"}', None, FAILURE),
    ('{"answer":"A|B|C|D"}', None, FAILURE),
    ('{"answer": "a bowl"}', None, FAILURE),
    ('{"answer": ""}', None, FAILURE),
    ('{"answer":"A"}\n{"answer":"C"}', None, FAILURE),
    # Prose naming one letter in an answer-giving phrase.
    ("The answer is B.", "B", REPAIRED),
    ("The answer is b.", "B", REPAIRED),
    ("Answer: c", "C", REPAIRED),
    ("Final answer: (D)", "D", REPAIRED),
    ("**Answer:** A", "A", REPAIRED),
    ("I choose C because the kettle was on the stove.", "C", REPAIRED),
    ("My choice is option a.", "A", REPAIRED),
    ("The correct option is D", "D", REPAIRED),
    ("Answer: A because the mug was on the shelf.", "A", REPAIRED),
    ("I think it is B.", "B", REPAIRED),
    ("(C)", "C", REPAIRED),
    ("D", "D", REPAIRED),
    ("A.", "A", REPAIRED),
    ("B) cup", "B", REPAIRED),
    ("A person walks into the kitchen. Answer: C", "C", REPAIRED),
    ("A cup is on the table, so the answer is D.", "D", REPAIRED),
    # The exact text of one option.
    ("cup", "B", REPAIRED),
    ("The kettle.", "C", REPAIRED),
    ("A red mug", "A", REPAIRED),
    ("The answer is a cup.", "B", REPAIRED),
    ("My choice is the kettle", "C", REPAIRED),
    # Articles are not option A.
    ("My choice is a bowl", None, FAILURE),
    ("The answer is a spoon.", None, FAILURE),
    ("a cat sat on a mat", None, FAILURE),
    ("A spoon, I believe.", None, FAILURE),
    # Two options, or letters in contradicting roles.
    ("Option A is wrong; B is right.", None, FAILURE),
    ("A and B", None, FAILURE),
    ("A, C", None, FAILURE),
    ("B or C", None, FAILURE),
    ("The answer is A or C.", None, FAILURE),
    ("answer: a or b", None, FAILURE),
    ("I think option B or option C", None, FAILURE),
    ("Either (A) or (D).", None, FAILURE),
    ("B. a red mug", None, FAILURE),
    ("A|B|C|D", None, FAILURE),
    # Nothing recoverable.
    ("", None, FAILURE),
    ("   \n", None, FAILURE),
    ("I cannot tell from the video.", None, FAILURE),
    ("plan b is to wait", None, FAILURE),
    ('{"answer": "Z"}', None, FAILURE),
    ('{"answer": null}', None, FAILURE),
]


@pytest.mark.parametrize(("text", "option", "status"), MC_TABLE)
def test_multiple_choice(text: str, option: str | None, status: str) -> None:
    parsed = parse_choice(text, CHOICES)
    assert (parsed.option, parsed.status) == (option, status), parsed.reason


EA_TABLE: list[tuple[str, str | None, str]] = [
    ('{"answer":"E"}', "E", CLEAN),
    ('{"answer": "e"}', "E", REPAIRED),
    ("It is not yet appropriate to answer.", "E", REPAIRED),
    ("E. It is not yet appropriate to answer", "E", REPAIRED),
    ("Answer: E", "E", REPAIRED),
    ("e.g. the kettle, so C", "C", REPAIRED),
    ("D or E", None, FAILURE),
]


@pytest.mark.parametrize(("text", "option", "status"), EA_TABLE)
def test_evidence_availability(text: str, option: str | None, status: str) -> None:
    parsed = parse_choice(text, EA)
    assert (parsed.option, parsed.status) == (option, status), parsed.reason


DECISION_TABLE: list[tuple[str, str | None, str]] = [
    ('{"decision":"SILENT","reason":"the stove is off"}', "SILENT", CLEAN),
    (
        '{"decision":"INTERVENE","proactive_response":"Turn off the stove.","reason":"on"}',
        "INTERVENE",
        CLEAN,
    ),
    ('{"decision":"silent","reason":"x"}', "SILENT", REPAIRED),
    ('```json\n{"decision": "INTERVENE", "proactive_response": "Hi"}\n```', "INTERVENE", REPAIRED),
    ("SILENT", "SILENT", REPAIRED),
    ("Decision: INTERVENE. Remind the user to take the keys.", "INTERVENE", REPAIRED),
    ("I will remain silent for now.", "SILENT", REPAIRED),
    ("It is not clear yet, so I will stay SILENT.", "SILENT", REPAIRED),
    ("I won't stay silent and will intervene now.", "INTERVENE", REPAIRED),
    ("SILENT. I cannot intervene before the drawer opens.", "SILENT", REPAIRED),
    # Under negation a decision word states nothing.
    ("I should not intervene yet.", None, FAILURE),
    ("There is no need to intervene; stay quiet.", None, FAILURE),
    ("Not silent: the user needs a reminder.", None, FAILURE),
    ("Don't intervene.", None, FAILURE),
    ("I never stay silent when the stove is on.", None, FAILURE),
    # Both, or neither.
    ("silent or intervene, hard to say", None, FAILURE),
    ("SILENT. Actually, INTERVENE.", None, FAILURE),
    ("Stay quiet.", None, FAILURE),
    ('{"decision":"SILENT"} {"decision":"INTERVENE"}', None, FAILURE),
    ('{"decision":"NOT SILENT"}', None, FAILURE),
]


@pytest.mark.parametrize(("text", "decision", "status"), DECISION_TABLE)
def test_decision(text: str, decision: str | None, status: str) -> None:
    parsed = parse_decision(text)
    assert (parsed.decision, parsed.status) == (decision, status), parsed.reason


ERA_TABLE: list[tuple[str, str | None, str | None, str]] = [
    ('{"decision":"INTERVENE","answer":"C","reason":"seen"}', "INTERVENE", "C", CLEAN),
    ('{"decision":"INTERVENE","answer":"cup","reason":"seen"}', "INTERVENE", "B", REPAIRED),
    ('{"decision":"INTERVENE","answer":"a","reason":"seen"}', "INTERVENE", "A", REPAIRED),
    ("INTERVENE: the answer is D", "INTERVENE", "D", REPAIRED),
    ('{"decision":"INTERVENE","answer":"A or B"}', "INTERVENE", None, FAILURE),
    ('{"decision":"INTERVENE","answer":"a bowl"}', "INTERVENE", None, FAILURE),
    ("INTERVENE: the answer is a spoon", "INTERVENE", None, FAILURE),
    ("I should intervene. Option A is wrong; B is right.", "INTERVENE", None, FAILURE),
    ('{"decision":"SILENT","reason":"cannot tell A from B yet"}', "SILENT", None, CLEAN),
]


@pytest.mark.parametrize(("text", "decision", "option", "status"), ERA_TABLE)
def test_era(text: str, decision: str | None, option: str | None, status: str) -> None:
    parsed = parse_decision(text, CHOICES, needs_option=True)
    assert (parsed.decision, parsed.option, parsed.status) == (decision, option, status), (
        parsed.reason
    )


def test_the_table_is_large() -> None:
    assert len(MC_TABLE) + len(EA_TABLE) + len(DECISION_TABLE) + len(ERA_TABLE) >= 60


def test_failures_say_why() -> None:
    assert parse_choice("Option A is wrong; B is right.", CHOICES).reason == (
        "several options: A, B"
    )
    assert parse_decision("I should not intervene yet.").reason == (
        "SILENT/INTERVENE only under negation"
    )
    assert "several options: A, B" in parse_choice('{"answer": "B. a red mug"}', CHOICES).reason
