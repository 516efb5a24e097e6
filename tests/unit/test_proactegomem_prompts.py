"""The ProactEgoMem prompts are the paper's appendix K, verbatim (compared with a copy of the
paper's text in tests/fixtures; the extraction flattened line breaks, so whitespace is
normalised on both sides)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apmbench.harness.suites.proactegomem import prompts

PAPER = (Path(__file__).parents[1] / "fixtures" / "proactegomem_appendix_k.txt").read_text()


def flat(text: str) -> str:
    return " ".join(text.split())


def between(start: str, end: str) -> str:
    m = re.search(re.escape(start) + r"\s*(.*?)\s*" + re.escape(end), flat(PAPER))
    assert m, (start, end)
    return m.group(1)


def test_intervention_and_notification_prompts_are_verbatim() -> None:
    assert flat(prompts.INTERVENTION_LT) == between("Intervention Level, LT (verbatim)", "Table 7")
    assert flat(prompts.NOTIFICATION_LT) == between("Notification Level, LT (verbatim)", "Table 8")


def test_qa_template_and_condition_instructions_are_verbatim() -> None:
    paper = between("Memory QA prompt template (placeholders in angle brackets)", "Text filled")
    ours = prompts.QA_TEMPLATE.format(
        instruction="<condition instruction, see below>",
        semantics="<task-specific description of what start/stop calls mean>",
        memory="<the memory for this condition, rendered as a list of entries>",
        frames="<IC: up to 40 frames sampled from the memory’s segments; No Memory: frames "
        "sampled uniformly from the clip>",
        question="<question>",
        choices="A. <choice> B. <choice> C. <choice> D. <choice>",
    )
    assert flat(ours) == paper
    conditions = between("per memory condition (verbatim)", "K.4")
    expected = " ".join(f"{c}: {prompts.CONDITION_INSTRUCTIONS[c]}" for c in prompts.CONDITIONS)
    assert conditions == flat(expected)


@pytest.mark.parametrize(
    ("ours", "label"),
    [(prompts.JUDGE_INTERVENTION, "Intervention-Level judge instruction (verbatim)"),
     (prompts.JUDGE_NOTIFICATION, "Notification-Level judge instruction (verbatim)")],
)  # fmt: skip
def test_judge_instructions_are_verbatim(ours: str, label: str) -> None:
    assert (flat(PAPER) + " END").count(f"{label} {flat(ours)} ") == 1


def test_st_prompts_read_state_for_location() -> None:
    st = prompts.intervention_prompt("ST")
    assert "location" not in st
    assert "`start_state_tracking`" in st and "`state`: a concise description" in st
    assert "appliances" in st  # this suite's own ST policy (Table 7 is not in the text)
    assert prompts.notification_prompt("ST").startswith(prompts.NOTIFICATION_LT[:200])
    with pytest.raises(ValueError, match="XX"):
        prompts.intervention_prompt("XX")


def test_ic_prompts_drop_the_instance_id_paragraph_and_name_the_recording_tools() -> None:
    ic = prompts.intervention_prompt("IC")
    assert "location" not in ic and "`instance_id` is the tracking id" not in ic
    assert "`start_recording`" in ic and "`stop_recording`" in ic
    # Everything but the swapped lines is the paper's LT prompt.
    assert ic.startswith(prompts.INTERVENTION_LT[:60])
    assert ic.endswith(prompts.INTERVENTION_LT[-240:])
    assert "information shown" in prompts.notification_prompt("IC")


def test_judge_template_and_notification_references_are_the_papers() -> None:
    assert flat(prompts.JUDGE_TEMPLATE) in flat(PAPER)
    for task, ref in prompts.NOTIFICATION_REFERENCES.items():
        assert f"{task}: “{ref}”" in flat(PAPER)
