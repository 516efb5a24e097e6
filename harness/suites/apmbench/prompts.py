"""The benchmark's prompts (APM-Bench appendix E.1-E.5), rendered by the harness.

The wording follows the paper; the paper's text extraction lost the spaces
after punctuation, which are restored here. Angle-bracket fields of the paper
are `{named}` fields. Times are rendered on the trajectory clock as
"DAY7 14:24:19" so that intervals spanning days stay unambiguous.

E.5 (the text-summary memory writer) is not sent by the harness: a
text-summary memory system renders it itself at session end, from the
SessionStart/SessionEnd it receives, so that every such system uses the
paper's wording.
"""

from __future__ import annotations

from collections.abc import Sequence

from apmbench.adapters.sdk.types import Choice

SYSTEM_PROMPT = (
    "You are a first-person streaming video assistant.\n\n"
    "Use only the visual stream, persistent memory, and user interactions made available to "
    "you. Do not assume access to future video or to information that has not been provided.\n\n"
    "Return exactly one valid JSON object in the requested format. Do not add markdown or text "
    "outside the JSON object."
)

_MCQA_LEAD = (
    "Based only on the information available up to the current moment, answer the following "
    "multiple-choice question."
)
_STU_GUIDANCE = (
    "Task guidance:\n"
    "Interpret left, right, front, behind, and other viewpoint-dependent directions from the "
    "camera wearer's egocentric viewpoint unless the question explicitly defines another "
    "reference frame. For object-to-object relations, use the reference object stated in the "
    "question."
)

ERA_QUESTION = (
    "At the beginning of this session, the user asked a delayed-answer question. Do not guess or "
    "answer it immediately; retain it and wait for a response checkpoint.\n\n"
    "Question:\n{question}\n\nChoices:\n{choices}"
)

ERA_PROBE = (
    "This is a response checkpoint. Based only on the causal information available at this "
    "checkpoint, decide whether the previously asked question now has one reliable and uniquely "
    "determined answer. Do not guess or use a result that is only revealed later.\n\n"
    "If the answer is not yet uniquely determined, return:\n"
    '{{"decision":"SILENT","reason":"…"}}\n\n'
    "If the answer is now uniquely determined, return:\n"
    '{{"decision":"INTERVENE","answer":"A|B|C|D","reason":"…"}}'
)

_SILENT_OR_RESPOND = (
    "If no response should be provided, return:\n"
    '{{"decision":"SILENT","reason":"…"}}\n\n'
    "If a {what} should be provided, return:\n"
    '{{"decision":"INTERVENE","proactive_response":"…","reason":"…"}}'
)

RCR_PROBE = (
    "This is a response checkpoint. Decide whether a reminder obligation previously registered "
    "by the user is visually triggered at this checkpoint and should be fulfilled now.\n\n"
    "Use the registered condition and requested response together with the causal visual "
    "evidence. The existence of a registration alone is not a trigger. Intervene only when the "
    "registered condition is currently observable and satisfied.\n\n"
    "Do not assume that a response from another evaluation call has already been delivered. "
    "Remain silent when the registered condition is not currently satisfied or the visual "
    "evidence is insufficient.\n\n" + _SILENT_OR_RESPOND.replace("{what}", "registered response")
)

INTERVAL_MARKER = (
    "The unlabeled evaluation interval begins now at {start_time}. Assess assistance only from "
    "this marker through the current cutoff."
)

_INTERVAL_HEAD = (
    "Evaluate the following unlabeled half-open interval in the causal visual stream:\n"
    "[{start_time}, {end_time})\n\n"
    "Decide whether useful and timely proactive assistance should be provided during that "
    "interval. "
)
_INTERVAL_TAIL = (
    "\n\nIntervene only when the currently observable situation makes a response useful and "
    "actionable. Remain silent when the evidence is insufficient, the relevant condition has not "
    "been met, or the opportunity is not currently actionable.\n\n"
    + _SILENT_OR_RESPOND.replace("{what}", "response")
)
MPA_PROBE = (
    _INTERVAL_HEAD
    + "Use earlier experiences, preferences, or repeated behavior only when they materially "
    "improve concrete assistance in the current situation." + _INTERVAL_TAIL
)
PRM_PROBE = (
    _INTERVAL_HEAD
    + "Consider whether a previously registered reminder obligation is visually triggered during "
    "this interval and should be fulfilled. Use the registered condition and requested response "
    "together with the causal visual evidence. The existence of a registration alone is not a "
    "trigger. Intervene only when the registered condition is currently observable and satisfied."
    + _INTERVAL_TAIL
)
TPG_PROBE = (
    _INTERVAL_HEAD
    + "Consider whether progress in the same ongoing longer-term task makes stage-appropriate "
    "guidance useful now." + _INTERVAL_TAIL
)

EVIDENCE_AVAILABILITY = (
    "Based only on the causal information available up to the current moment, first determine "
    "whether the evidence is sufficient to support one reliable answer and whether this is the "
    "appropriate time to answer.\n\n"
    "If the evidence is sufficient, select the best content answer. If the evidence is "
    "insufficient or answering would require information revealed only later, select the option "
    "that explicitly states it is not yet appropriate to answer.\n\n"
    "Question:\n{question}\n\nChoices:\n{choices}\n\n"
    'Return exactly:\n{{"answer":"A|B|C|D|E"}}'
)


def render_choices(choices: Sequence[Choice]) -> str:
    return "\n".join(f"{c.option_id}. {c.text}" for c in choices)


def mcqa(question: str, choices: Sequence[Choice], *, spatial: bool = False) -> str:
    parts = [_MCQA_LEAD]
    if spatial:
        parts.append(_STU_GUIDANCE)
    parts.append(f"Question:\n{question}")
    parts.append(f"Choices:\n{render_choices(choices)}")
    parts.append('Return exactly:\n{"answer":"A|B|C|D"}')
    return "\n\n".join(parts)


def evidence_availability(question: str, choices: Sequence[Choice]) -> str:
    return EVIDENCE_AVAILABILITY.format(question=question, choices=render_choices(choices))


def era_question(question: str, choices: Sequence[Choice]) -> str:
    return ERA_QUESTION.format(question=question, choices=render_choices(choices))


def era_probe() -> str:
    return ERA_PROBE.format()


def rcr_probe() -> str:
    return RCR_PROBE.format()


def interval_marker(start_time: str) -> str:
    return INTERVAL_MARKER.format(start_time=start_time)


def interval_probe(task: str, start_time: str, end_time: str) -> str:
    template = {"MPA": MPA_PROBE, "PRM": PRM_PROBE, "TPG": TPG_PROBE}[task]
    return template.format(start_time=start_time, end_time=end_time)


def example_decision_probe(start_time: str, end_time: str) -> str:
    """A real interval probe, for `check` to send a decision query as the benchmark would."""
    return interval_probe("PRM", start_time, end_time)
