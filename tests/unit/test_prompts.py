"""Every rendered prompt against the paper's wording (appendix E.1-E.5, A.3).

The paper blocks below are copied from the paper's text as extracted, which
lost the spaces after punctuation ("stream,persistent memory"); the harness
restores them. So both sides are compared with all whitespace removed, and
typographic apostrophes (the paper's rendering of ') made plain. Fields are
rendered with the paper's own angle-bracket names, so a dropped, added or
reworded sentence fails.
"""

from __future__ import annotations

import re

import pytest

from apmbench.adapters.sdk.types import Choice
from apmbench.adapters.systems import summary_prompts
from apmbench.harness.suites.apmbench import prompts, rubric

E1_SYSTEM = (
    "You are a first-person streaming video assistant.\n"
    "\n"
    "Use only the visual stream,persistent memory,and user interactions made available to you.Do not assume access to future video or to information that has not been provided.\n"
    "\n"
    "Return exactly one valid JSON object in the requested format.Do not add markdown or text outside the JSON object.\n"
)

E2_MCQA = (
    "Based only on the information available up to the current moment,answer the following multiple-choice question.\n"
    "\n"
    "Question:\n"
    "\n"
    "<QUESTION>\n"
    "\n"
    "Choices:\n"
    "\n"
    "A.<OPTION A>\n"
    "\n"
    "B.<OPTION B>\n"
    "\n"
    "C.<OPTION C>\n"
    "\n"
    "D.<OPTION D>\n"
    "\n"
    "Return exactly:\n"
    "\n"
    '{"answer":"A|B|C|D"}\n'
)

E2_STU = (
    "Based only on the information available up to the current moment,answer the following multiple-choice question.\n"
    "\n"
    "Task guidance:\n"
    "\n"
    "Interpret left,right,front,behind,and other viewpoint-dependent directions from the camera wearer’s egocentric viewpoint unless the question explicitly defines another reference frame.For object-to-object relations,use the reference object stated in the question.\n"
    "\n"
    "Question:\n"
    "\n"
    "<QUESTION>\n"
    "\n"
    "Choices:\n"
    "\n"
    "A.<OPTION A>\n"
    "\n"
    "B.<OPTION B>\n"
    "\n"
    "C.<OPTION C>\n"
    "\n"
    "D.<OPTION D>\n"
    "\n"
    "Return exactly:\n"
    "\n"
    '{"answer":"A|B|C|D"}\n'
)

E3_ERA_QUESTION = (
    "At the beginning of this session,the user asked a delayed-answer question.Do not guess or answer it immediately;retain it and wait for a response checkpoint.\n"
    "\n"
    "Question:\n"
    "\n"
    "<QUESTION>\n"
    "\n"
    "Choices:\n"
    "\n"
    "A.<OPTION A>\n"
    "\n"
    "B.<OPTION B>\n"
    "\n"
    "C.<OPTION C>\n"
    "\n"
    "D.<OPTION D>\n"
)

E3_ERA_PROBE = (
    "This is a response checkpoint.Based only on the causal information available at this checkpoint,decide whether the previously asked question now has one reliable and uniquely determined answer.Do not guess or use a result that is only revealed later.\n"
    "\n"
    "If the answer is not yet uniquely determined,return:\n"
    "\n"
    '{"decision":"SILENT","reason":"…"}\n'
    "\n"
    "If the answer is now uniquely determined,return:\n"
    "\n"
    '{"decision":"INTERVENE","answer":"A|B|C|D","reason":"…"}\n'
)

E3_RCR_PROBE = (
    "This is a response checkpoint.Decide whether a reminder obligation previously registered by the user is visually triggered at this checkpoint and should be fulfilled now.\n"
    "\n"
    "Use the registered condition and requested response together with the causal visual evidence.The existence of a registration alone is not a trigger.Intervene only when the registered condition is currently observable and satisfied.\n"
    "\n"
    "Do not assume that a response from another evaluation call has already been delivered.Remain silent when the registered condition is not currently satisfied or the visual evidence is insufficient.\n"
    "\n"
    "If no response should be provided,return:\n"
    "\n"
    '{"decision":"SILENT","reason":"…"}\n'
    "\n"
    "If a registered response should be provided,return:\n"
    "\n"
    '{"decision":"INTERVENE","proactive_response":"…","reason":"…"}\n'
)

E3_INTERVAL_MARKER = "The unlabeled evaluation interval begins now at<START_TIME>.Assess assistance only from this marker through the current cutoff.\n"

E3_MPA_PROBE = (
    "Evaluate the following unlabeled half-open interval in the causal visual stream:\n"
    "\n"
    "[<START_TIME>,<END_TIME>)\n"
    "\n"
    "Decide whether useful and timely proactive assistance should be provided during that interval.Use earlier experiences,preferences,or repeated behavior only when they materially improve concrete assistance in the current situation.\n"
    "\n"
    "Intervene only when the currently observable situation makes a response useful and actionable.Remain silent when the evidence is insufficient,the relevant condition has not been met,or the opportunity is not currently actionable.\n"
    "\n"
    "If no response should be provided,return:\n"
    "\n"
    '{"decision":"SILENT","reason":"…"}\n'
    "\n"
    "If a response should be provided,return:\n"
    "\n"
    '{"decision":"INTERVENE","proactive_response":"…","reason":"…"}\n'
)

E3_PRM_PROBE = (
    "Evaluate the following unlabeled half-open interval in the causal visual stream:\n"
    "\n"
    "[<START_TIME>,<END_TIME>)\n"
    "\n"
    "Decide whether useful and timely proactive assistance should be provided during that interval.Consider whether a previously registered reminder obligation is visually triggered during this interval and should be fulfilled.Use the registered condition and requested response together with the causal visual evidence.The existence of a registration alone is not a trigger.Intervene only when the registered condition is currently observable and satisfied.\n"
    "\n"
    "Intervene only when the currently observable situation makes a response useful and actionable.Remain silent when the evidence is insufficient,the relevant condition has not been met,or the opportunity is not currently actionable.\n"
    "\n"
    "If no response should be provided,return:\n"
    "\n"
    '{"decision":"SILENT","reason":"…"}\n'
    "\n"
    "If a response should be provided,return:\n"
    "\n"
    '{"decision":"INTERVENE","proactive_response":"…","reason":"…"}\n'
)

E3_TPG_PROBE = (
    "Evaluate the following unlabeled half-open interval in the causal visual stream:\n"
    "\n"
    "[<START_TIME>,<END_TIME>)\n"
    "\n"
    "Decide whether useful and timely proactive assistance should be provided during that interval.Consider whether progress in the same ongoing longer-term task makes stage-appropriate guidance useful now.\n"
    "\n"
    "Intervene only when the currently observable situation makes a response useful and actionable.Remain silent when the evidence is insufficient,the relevant condition has not been met,or the opportunity is not currently actionable.\n"
    "\n"
    "If no response should be provided,return:\n"
    "\n"
    '{"decision":"SILENT","reason":"…"}\n'
    "\n"
    "If a response should be provided,return:\n"
    "\n"
    '{"decision":"INTERVENE","proactive_response":"…","reason":"…"}\n'
)

E4_EVIDENCE = (
    "Based only on the causal information available up to the current moment,first determine whether the evidence is sufficient to support one reliable answer and whether this is the appropriate time to answer.\n"
    "\n"
    "If the evidence is sufficient,select the best content answer.If the evidence is insufficient or answering would require information revealed only later,select the option that explicitly states it is not yet appropriate to answer.\n"
    "\n"
    "Question:\n"
    "\n"
    "<QUESTION>\n"
    "\n"
    "Choices:\n"
    "\n"
    "A.<OPTION A>\n"
    "\n"
    "B.<OPTION B>\n"
    "\n"
    "C.<OPTION C>\n"
    "\n"
    "D.<OPTION D>\n"
    "\n"
    "E.<OPTION E>\n"
    "\n"
    "Return exactly:\n"
    "\n"
    '{"answer":"A|B|C|D|E"}\n'
)

E5_WRITER = (
    "You maintain query-agnostic persistent memory for a first-person streaming video assistant.\n"
    "\n"
    "Observe this complete session and the user interactions that occur during it.After the session ends,write a detailed,self-contained memory of information that may remain useful in later sessions.The original session will not be available then.\n"
    "\n"
    "Decide what to retain and how to organize it without anticipating any future evaluation question.Preserve events,entities,states,locations,task progress,corrections,preferences,and registered obligations when they are visually or explicitly supported.Do not invent details;preserve uncertainty when needed.\n"
    "\n"
    "Return exactly one valid JSON object in this format:\n"
    "\n"
    '{"memory":"A detailed,self-contained memory of the session."}\n'
)

E5_REQUEST = (
    "Session metadata:\n"
    "\n"
    "-day:<DAY_ID>\n"
    "\n"
    "-session:<SESSION_ID>\n"
    "\n"
    "-wall-clock interval:[<START_TIME>,<END_TIME>)\n"
    "\n"
    "The session has ended.Write its persistent memory now.\n"
)

A3_RUBRIC = (
    "You are an impartial evaluator for a streaming video assistant benchmark.\n"
    "\n"
    "The assistant’s SILENT/INTERVENE decision has already passed deterministic correctness checks.Evaluate only the semantic quality of its explanation and,when it intervenes,its proactive response.Reference annotations describe accepted evidence and one acceptable response;do not require lexical overlap or identical wording.Do not reward verbosity.Do not infer facts outside the supplied annotations.\n"
    "\n"
    "For a correct SILENT decision,judge whether the explanation identifies the decisive condition that is still missing and distinguishes this evaluation window from a valid response opportunity.For ERA,evaluate only whether the reason correctly explains whether the answer evidence is causally available;the MCQA answer itself has already passed deterministic checking.\n"
    "\n"
    "Use this 1-5 scale:\n"
    "\n"
    "5=task-faithful,fully grounded,factually accurate,precise,and useful.\n"
    "\n"
    "4=core content is correct and useful,with only a minor omission or imprecision.\n"
    "\n"
    "3=basically correct but generic,incomplete,or uses only part of the important evidence.\n"
    "\n"
    "2=related but has a major grounding gap,factual issue,or omission that could mislead.\n"
    "\n"
    "1=the decision happens to be correct,but the explanation or response is substantially inconsistent or unusable.\n"
    "\n"
    "Return exactly one JSON object with all and only the following fields:\n"
    "\n"
    "{\n"
    "\n"
    '"score":1,\n'
    "\n"
    '"criterion_checks":{\n'
    "\n"
    '"task_fidelity":"pass|partial|fail",\n'
    "\n"
    '"historical_or_registration_grounding":"pass|partial|fail|not_applicable",\n'
    "\n"
    '"current_trigger_or_silence_grounding":"pass|partial|fail",\n'
    "\n"
    '"factual_support":"pass|partial|fail",\n'
    "\n"
    '"usefulness":"pass|partial|fail|not_applicable"\n'
    "\n"
    "},\n"
    "\n"
    '"critical_issues":[],\n'
    "\n"
    '"justification":"Concise evidence-based explanation."\n'
    "\n"
    "}\n"
    "\n"
    "The value shown as 1 for score is an example;replace it with one integer from 1 through 5.For each criterion,return exactly one of the literal enum values separated by|above,not the whole displayed string.Include every criterion_checks key even when its value is not_applicable.Keep critical_issues short and use an empty array when there is no critical issue.Keep justification concise and evidence-based.Do not wrap the JSON in Markdown or add text before or after it.\n"
)

A3_GUIDANCE = (
    "ERA:Check whether the reason correctly explains that answer evidence is or is not causally available at this heartbeat.\n"
    "\n"
    "RCR:Check fidelity to the in-session registration and whether the current observable condition justifies the registered response.\n"
    "\n"
    "MPA:Check whether earlier experience materially improves assistance for the current scene and whether the response is actionable rather than generic.\n"
    "\n"
    "PRM:Check fidelity to the earlier registration,whether its observable condition is satisfied,and whether the response preserves the obligation.\n"
    "\n"
    "TPG:Check whether history and the current scene belong to the same continuing task and whether progress or next-step guidance is accurate.\n"
)


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text.replace("’", "'"))


FOUR = tuple(Choice(o, f"<OPTION {o}>") for o in "ABCD")
FIVE = (*FOUR, Choice("E", "<OPTION E>"))


@pytest.mark.parametrize(
    ("rendered", "paper"),
    [
        (prompts.SYSTEM_PROMPT, E1_SYSTEM),
        (prompts.mcqa("<QUESTION>", FOUR), E2_MCQA),
        (prompts.mcqa("<QUESTION>", FOUR, spatial=True), E2_STU),
        (prompts.era_question("<QUESTION>", FOUR), E3_ERA_QUESTION),
        (prompts.era_probe(), E3_ERA_PROBE),
        (prompts.rcr_probe(), E3_RCR_PROBE),
        (prompts.interval_marker("<START_TIME>"), E3_INTERVAL_MARKER),
        (prompts.interval_probe("MPA", "<START_TIME>", "<END_TIME>"), E3_MPA_PROBE),
        (prompts.interval_probe("PRM", "<START_TIME>", "<END_TIME>"), E3_PRM_PROBE),
        (prompts.interval_probe("TPG", "<START_TIME>", "<END_TIME>"), E3_TPG_PROBE),
        (prompts.evidence_availability("<QUESTION>", FIVE), E4_EVIDENCE),
        (summary_prompts.text_summary_writer(), E5_WRITER),
        (
            summary_prompts.text_summary_request(
                "<DAY_ID>", "<SESSION_ID>", "<START_TIME>", "<END_TIME>"
            ),
            E5_REQUEST,
        ),
    ],
    ids=[
        "E1-system",
        "E2-mcqa",
        "E2-stu",
        "E3-era-question",
        "E3-era-probe",
        "E3-rcr-probe",
        "E3-interval-marker",
        "E3-mpa",
        "E3-prm",
        "E3-tpg",
        "E4-evidence",
        "E5-writer",
        "E5-request",
    ],
)
def test_rendered_prompt_is_the_papers_wording(rendered: str, paper: str) -> None:
    assert squash(rendered) == squash(paper)


def test_restored_spaces_read_as_prose() -> None:
    """The harness sends readable text, not the extraction's run-together words."""
    assert "visual stream, persistent memory, and user interactions" in prompts.SYSTEM_PROMPT
    assert "left, right, front, behind," in prompts.mcqa("q", FOUR, spatial=True)
    assert "preferences, and registered obligations" in summary_prompts.text_summary_writer()


def test_fields_are_filled() -> None:
    text = summary_prompts.text_summary_request("DAY2", "S004", "09:15:00", "09:40:00")
    assert "- day: DAY2\n- session: S004\n- wall-clock interval: [09:15:00, 09:40:00)" in text
    mcqa = prompts.mcqa("Where is the mug?", (Choice("A", "shelf"), Choice("B", "sink")))
    assert "Question:\nWhere is the mug?\n\nChoices:\nA. shelf\nB. sink" in mcqa


def test_judge_rubric_is_the_papers_a3_text() -> None:
    assert squash(rubric.RUBRIC) == squash(A3_RUBRIC)


@pytest.mark.parametrize("task", ["ERA", "RCR", "MPA", "PRM", "TPG"])
def test_judge_system_prompt_carries_its_tasks_guidance_only(task: str) -> None:
    lines = {line.split(":", 1)[0]: line for line in A3_GUIDANCE.strip().split("\n") if line}
    system = rubric.system_prompt(task)
    assert squash(system).startswith(squash(A3_RUBRIC))
    assert squash(system).endswith(squash(lines[task]))
    for other in set(lines) - {task}:
        assert squash(lines[other]) not in squash(system)
