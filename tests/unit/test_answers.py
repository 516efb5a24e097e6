"""Deterministic answer repair (appendix B.5) on a table of messy outputs."""

from __future__ import annotations

import pytest

from apmbench.harness.scoring.answers import CLEAN, FAILURE, REPAIRED, parse_choice, parse_decision

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


@pytest.mark.parametrize(
    ("text", "decision", "option", "status"),
    [
        # Cut off at the output limit inside the JSON: the decision field is unambiguous.
        (
            '{"decision":"SILENT","reason":"I will not INTERVENE until the drawer op',
            "SILENT",
            None,
            REPAIRED,
        ),
        (
            '{"decision": "INTERVENE", "answer": "C", "reason": "the drawer is open and',
            "INTERVENE",
            "C",
            REPAIRED,
        ),
        ('{"decision":"INTERVENE","reason":"the drawer', "INTERVENE", None, FAILURE),
        # The same object repeated until the limit: repaired; two different ones: a failure.
        ('{"decision":"SILENT","reason":"x"}' * 5 + '{"decision":"SIL', "SILENT", None, REPAIRED),
        (
            '{"decision":"SILENT","reason":"x"} {"decision":"INTERVENE","answer":"A"}',
            None,
            None,
            FAILURE,
        ),
        # Repetition with no decision anywhere: unrecoverable.
        ("I think that I think that I think that " * 50, None, None, FAILURE),
    ],
)
def test_adaptive_outputs_cut_at_the_length_limit(
    text: str, decision: str | None, option: str | None, status: str
) -> None:
    parsed = parse_decision(text, CHOICES, needs_option=True)
    assert (parsed.decision, parsed.option, parsed.status) == (decision, option, status), (
        parsed.reason
    )


def test_response_and_reason_are_kept_from_a_cut_off_object() -> None:
    parsed = parse_decision(
        '{"decision":"INTERVENE","proactive_response":"Turn off the \\"stove\\".","reason":"the pl'
    )
    assert parsed.decision == "INTERVENE" and parsed.status == REPAIRED
    assert parsed.response == 'Turn off the "stove".' and parsed.explanation == "the pl"


def test_disagreeing_json_answers_are_a_failure_not_a_pick() -> None:
    assert parse_choice('{"answer":"A"} {"answer":"B"}', CHOICES).status == FAILURE
    repeated = parse_choice('{"answer":"B"}\n{"answer":"B"}', CHOICES)
    assert (repeated.option, repeated.status) == ("B", REPAIRED)
