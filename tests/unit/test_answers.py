"""Deterministic answer repair (appendix B.5) on a table of messy outputs."""

from __future__ import annotations

import pytest

from apmbench.harness.answers import CLEAN, FAILURE, REPAIRED, parse_choice, parse_decision

CHOICES = [("A", "a red mug"), ("B", "a blue plate"), ("C", "the kettle"), ("D", "nothing")]
FIVE = [*CHOICES, ("E", "It is not yet appropriate to answer")]


@pytest.mark.parametrize(
    ("text", "option", "status"),
    [
        ('{"answer":"B"}', "B", CLEAN),
        ('{"answer": "B"}', "B", CLEAN),
        ('```json\n{"answer": "c"}\n```', "C", REPAIRED),
        ('Sure! {"answer": "D"} Hope that helps.', "D", REPAIRED),
        ('{"answer": "(A)"}', "A", REPAIRED),
        ('{"answer": "B. a blue plate"}', "B", REPAIRED),
        ('{"answer": "Option C"}', "C", REPAIRED),
        ("The answer is D.", "D", REPAIRED),
        ("Answer: b", "B", REPAIRED),
        ("(A)", "A", REPAIRED),
        ("B", "B", REPAIRED),
        ("C.", "C", REPAIRED),
        ("A person walks in. Answer: C", "C", REPAIRED),
        ("a blue plate", "B", REPAIRED),
        ("", None, FAILURE),
        ("   ", None, FAILURE),
        ("A and B", None, FAILURE),
        ("A, C", None, FAILURE),
        ("I think option B or option C", None, FAILURE),
        ('{"answer":"A|B|C|D"}', None, FAILURE),
        ('{"answer": "Z"}', None, FAILURE),
        ('{"answer": null}', None, FAILURE),
        ("a cat sat on the mat", None, FAILURE),
        ("I cannot tell from the video.", None, FAILURE),
    ],
)
def test_parse_choice(text: str, option: str | None, status: str) -> None:
    parsed = parse_choice(text, CHOICES)
    assert (parsed.option, parsed.status) == (option, status), parsed.reason


def test_several_options_are_named_in_the_failure() -> None:
    assert parse_choice("A and B", CHOICES).reason == "several options: A, B"


def test_fifth_option_only_when_offered() -> None:
    assert parse_choice('{"answer":"E"}', FIVE).option == "E"
    assert parse_choice('{"answer":"E"}', CHOICES).status == FAILURE


@pytest.mark.parametrize(
    ("text", "decision", "option", "status"),
    [
        ('{"decision":"SILENT","reason":"not yet"}', "SILENT", None, CLEAN),
        ('{"decision":"INTERVENE","answer":"B","reason":"seen"}', "INTERVENE", "B", CLEAN),
        ('{"decision":"intervene","answer":"b","reason":"seen"}', "INTERVENE", "B", REPAIRED),
        ('```\n{"decision": "SILENT", "reason": "x"}\n```', "SILENT", None, REPAIRED),
        ("I will remain SILENT for now.", "SILENT", None, REPAIRED),
        ("INTERVENE: the answer is C", "INTERVENE", "C", REPAIRED),
        ('{"decision":"INTERVENE","reason":"no option"}', "INTERVENE", None, FAILURE),
        ('{"decision":"MAYBE"}', None, None, FAILURE),
        ("silent or intervene, hard to say", None, None, FAILURE),
        ("", None, None, FAILURE),
        ("INTERVENE INTERVENE INTERVENE", "INTERVENE", None, FAILURE),
    ],
)
def test_parse_decision_for_era(
    text: str, decision: str | None, option: str | None, status: str
) -> None:
    parsed = parse_decision(text, CHOICES, needs_option=True)
    assert (parsed.decision, parsed.option, parsed.status) == (decision, option, status)


def test_proactive_response_and_reason_are_kept() -> None:
    parsed = parse_decision(
        '{"decision":"INTERVENE","proactive_response":"Turn off the stove.","reason":"plate"}'
    )
    assert parsed.response == "Turn off the stove." and parsed.explanation == "plate"
    assert parsed.status == CLEAN
