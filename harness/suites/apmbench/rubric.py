"""What the judge is told: the A.3 rubric, the task guidance and one probe's evidence.

The rubric is the paper's (appendix A.3) word for word; its text extraction
lost the spaces after punctuation, which are restored here. The judge sees
the causal cutoff, the reference annotations of the probe's candidate and the
model's raw response; it never decides the gate, which the harness has
already checked deterministically (Eq. 1).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from apmbench.harness.media.timecode import format_ms
from apmbench.harness.suites.apmbench.dataset import Candidate, Probe

RUBRIC = (
    "You are an impartial evaluator for a streaming video assistant benchmark.\n\n"
    "The assistant's SILENT/INTERVENE decision has already passed deterministic correctness "
    "checks. Evaluate only the semantic quality of its explanation and, when it intervenes, its "
    "proactive response. Reference annotations describe accepted evidence and one acceptable "
    "response; do not require lexical overlap or identical wording. Do not reward verbosity. Do "
    "not infer facts outside the supplied annotations.\n\n"
    "For a correct SILENT decision, judge whether the explanation identifies the decisive "
    "condition that is still missing and distinguishes this evaluation window from a valid "
    "response opportunity. For ERA, evaluate only whether the reason correctly explains whether "
    "the answer evidence is causally available; the MCQA answer itself has already passed "
    "deterministic checking.\n\n"
    "Use this 1-5 scale:\n\n"
    "5 = task-faithful, fully grounded, factually accurate, precise, and useful.\n\n"
    "4 = core content is correct and useful, with only a minor omission or imprecision.\n\n"
    "3 = basically correct but generic, incomplete, or uses only part of the important "
    "evidence.\n\n"
    "2 = related but has a major grounding gap, factual issue, or omission that could mislead.\n\n"
    "1 = the decision happens to be correct, but the explanation or response is substantially "
    "inconsistent or unusable.\n\n"
    "Return exactly one JSON object with all and only the following fields:\n\n"
    "{\n"
    '"score": 1,\n'
    '"criterion_checks": {\n'
    '"task_fidelity": "pass|partial|fail",\n'
    '"historical_or_registration_grounding": "pass|partial|fail|not_applicable",\n'
    '"current_trigger_or_silence_grounding": "pass|partial|fail",\n'
    '"factual_support": "pass|partial|fail",\n'
    '"usefulness": "pass|partial|fail|not_applicable"\n'
    "},\n"
    '"critical_issues": [],\n'
    '"justification": "Concise evidence-based explanation."\n'
    "}\n\n"
    "The value shown as 1 for score is an example; replace it with one integer from 1 through 5. "
    "For each criterion, return exactly one of the literal enum values separated by | above, not "
    "the whole displayed string. Include every criterion_checks key even when its value is "
    "not_applicable. Keep critical_issues short and use an empty array when there is no critical "
    "issue. Keep justification concise and evidence-based. Do not wrap the JSON in Markdown or "
    "add text before or after it."
)

TASK_GUIDANCE: dict[str, str] = {
    "ERA": "Check whether the reason correctly explains that answer evidence is or is not "
    "causally available at this heartbeat.",
    "RCR": "Check fidelity to the in-session registration and whether the current observable "
    "condition justifies the registered response.",
    "MPA": "Check whether earlier experience materially improves assistance for the current scene "
    "and whether the response is actionable rather than generic.",
    "PRM": "Check fidelity to the earlier registration, whether its observable condition is "
    "satisfied, and whether the response preserves the obligation.",
    "TPG": "Check whether history and the current scene belong to the same continuing task and "
    "whether progress or next-step guidance is accurate.",
}

# The paper's box shows the five guidance lines under "Task-specific guidance
# field (select the matching task)"; one call carries only its task's line.
SYSTEM_TEMPLATE = (
    RUBRIC.replace("{", "{{").replace("}", "}}") + "\n\nTask-specific guidance:\n{task}: {guidance}"
)

REQUEST_TEMPLATE = (
    "Task: {task}\n"
    "Causal cutoff: {cutoff}\n"
    "Reference decision at this probe: {reference_decision} "
    "(the assistant made this decision{option_note}).\n\n"
    "Reference annotations:\n{annotations}\n\n"
    "Model response:\n{response}"
)

CORRECTION_TEMPLATE = (
    "Your reply could not be used: {problem}. Return exactly one JSON object with all and only "
    "the fields score, criterion_checks, critical_issues and justification, as specified above, "
    "with no text before or after it."
)

MAX_RESPONSE_CHARS = 6000
"""Longer raw outputs (degenerate repetition up to the output limit) are cut, visibly."""

# Fields of each adaptive annotation format that hold the probes themselves;
# the judge gets the one probe being judged instead of the whole list.
_PROBE_FIELDS: dict[str, tuple[str, ...]] = {
    "ERA": ("positive_heartbeat", "negative_heartbeats"),
    "RCR": ("positive_heartbeat", "negative_heartbeats"),
    "MPA": ("ideal_response_window", "negative_or_silence_windows"),
    "PRM": ("ideal_response_window", "negative_or_silence_windows"),
    "TPG": ("ideal_response_windows", "negative_or_silence_windows"),
}
_ID_FIELDS = ("task_type", "trajectory_id", "candidate_id")


def system_prompt(task: str) -> str:
    return SYSTEM_TEMPLATE.format(task=task, guidance=TASK_GUIDANCE[task])


def reference_annotations(candidate: Candidate, probe: Probe) -> dict[str, object]:
    """The candidate's shared annotations plus this probe's own label (reference, reasons)."""
    skip = set(_ID_FIELDS) | set(_PROBE_FIELDS[candidate.task])
    shared = {k: v for k, v in candidate.raw.items() if k not in skip}
    decision = "INTERVENE" if probe.positive else "SILENT"
    this_probe: dict[str, object] = {"polarity": "positive" if probe.positive else "negative"}
    this_probe["reference_decision"] = decision
    this_probe.update(probe.label)
    return {**shared, "this_probe": this_probe}


def _response_text(raw_output: str) -> str:
    if len(raw_output) <= MAX_RESPONSE_CHARS:
        return raw_output
    cut = len(raw_output) - MAX_RESPONSE_CHARS
    return raw_output[:MAX_RESPONSE_CHARS] + f"\n[... {cut} more characters cut by the harness]"


def request_messages(
    candidate: Candidate, probe: Probe, instance: Mapping[str, object]
) -> list[dict[str, str]]:
    """The chat messages for one gate-passing probe: system rubric + the probe's evidence."""
    option_note = ""
    if candidate.task == "ERA" and probe.positive:
        option_note = f" and chose the correct option {candidate.correct_option_id}"
    cutoff = format_ms(probe.time_ms)
    if probe.interval_start_ms is not None:
        cutoff += f" (end of the interval [{format_ms(probe.interval_start_ms)}, {cutoff}))"
    user = REQUEST_TEMPLATE.format(
        task=candidate.task,
        cutoff=cutoff,
        reference_decision="INTERVENE" if probe.positive else "SILENT",
        option_note=option_note,
        annotations=json.dumps(
            reference_annotations(candidate, probe), indent=2, ensure_ascii=False
        ),
        response=_response_text(str(instance.get("raw_output", ""))),
    )
    return [
        {"role": "system", "content": system_prompt(candidate.task)},
        {"role": "user", "content": user},
    ]


def templates_sha256() -> str:
    """Identifies the judge's wording: part of the scoring settings that `compare` checks."""
    text = json.dumps(
        [SYSTEM_TEMPLATE, TASK_GUIDANCE, REQUEST_TEMPLATE, CORRECTION_TEMPLATE, MAX_RESPONSE_CHARS],
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()
