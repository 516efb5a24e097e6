"""Reading answers out of raw model text, with deterministic repair (appendix B.5).

What can be repaired without guessing is repaired; everything else is an
unrecoverable format failure, counted per task and system:

- multiple choice: a JSON object with an "answer" field naming one option;
  else, in prose, exactly one option named unambiguously ("Answer: B", "(B)",
  "B.", "option B", a lone letter, or the exact text of one choice). Two
  different options named = failure.
- decisions: a JSON object with "decision" SILENT or INTERVENE (any case);
  else, in JSON cut off before it closed (an output that ran to the length
  limit), one "decision" field value; else exactly one of the two words in
  the text. For a decision with an option, INTERVENE also needs one option, read as
  above.

Several JSON objects that disagree (two different answers or decisions) are
a failure, never a pick; repeated identical objects are repaired.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

CLEAN = "clean"
REPAIRED = "repaired"
FAILURE = "failure"


@dataclass(frozen=True)
class ParsedChoice:
    option: str | None
    status: str
    reason: str = ""


@dataclass(frozen=True)
class ParsedDecision:
    decision: str | None  # "SILENT" | "INTERVENE"
    status: str
    reason: str = ""
    option: str | None = None
    response: str = ""
    explanation: str = ""


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text`, in order (code fences ignored)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    i = 0
    while (start := text.find("{", i)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            i = start + 1
            continue
        if isinstance(value, dict):
            found.append(value)
        i = end
    return found


def _is_clean_json(text: str, obj: dict[str, Any]) -> bool:
    try:
        return bool(json.loads(text.strip()) == obj)
    except json.JSONDecodeError:
        return False


def _option_in_value(value: str, options: Sequence[str]) -> str | None:
    """An option letter from a field value like "B", "(B)", "B.", "Option B", "B: text"."""
    m = re.fullmatch(
        r"\s*(?:option\s*)?[\(\[]?\s*([A-Za-z])\s*[\)\]]?\s*(?:[.:)\-]\s*.*)?", value, re.I | re.S
    )
    if m and m.group(1).upper() in options:
        return m.group(1).upper()
    return None


# Where prose names an option. Keyword patterns accept a lower-case letter
# ("answer: b"); bare letters must be capitals, so the article "a" never counts.
_KEYWORD = re.compile(r"\b(?:answer|option|choice)\s*(?:is|:|=)?\s*[\(\[\"']?\s*([a-e])\b", re.I)
_PARENTHESISED = re.compile(r"\(([A-E])\)")
_LEADING = re.compile(r"^\s*([A-E])\s*(?:[.:)]|$)", re.M)
_LIST = re.compile(r"^\s*\(?([A-E])\)?(?:\s*(?:,|and|or|/|&|\|)\s*\(?([A-E])\)?)+\s*\.?\s*$")


def _options_in_prose(text: str, choices: Sequence[tuple[str, str]]) -> set[str]:
    options = {o for o, _ in choices}
    listed = _LIST.match(text)
    if listed:
        return set(re.findall(r"[A-E]", text)) & options
    named = {m.group(1).upper() for m in _KEYWORD.finditer(text)}
    named |= {m.group(1) for m in _PARENTHESISED.finditer(text)}
    named |= {m.group(1) for m in _LEADING.finditer(text)}
    named &= options
    if not named:
        lowered = text.strip().lower().rstrip(".")
        named = {o for o, t in choices if t and lowered == t.strip().lower().rstrip(".")}
    return named


def parse_choice(text: str, choices: Sequence[tuple[str, str]]) -> ParsedChoice:
    """The option chosen in `text`; `choices` are (option_id, text) pairs."""
    options = [o for o, _ in choices]
    if not text.strip():
        return ParsedChoice(None, FAILURE, "empty output")
    answers = [obj for obj in _json_objects(text) if "answer" in obj]
    if answers:
        values = [obj["answer"] for obj in answers]
        picked = [_option_in_value(str(v), options) if v is not None else None for v in values]
        if len(set(picked)) > 1:
            return ParsedChoice(None, FAILURE, "several JSON answers disagree")
        if picked[0] is None:
            return ParsedChoice(None, FAILURE, f"answer field {values[0]!r} names no single option")
        exact = _is_clean_json(text, answers[0]) and str(values[0]) == picked[0]
        return ParsedChoice(picked[0], CLEAN if exact else REPAIRED)
    named = _options_in_prose(text, choices)
    if len(named) == 1:
        return ParsedChoice(named.pop(), REPAIRED, "option read from prose")
    if len(named) > 1:
        return ParsedChoice(None, FAILURE, "several options: " + ", ".join(sorted(named)))
    return ParsedChoice(None, FAILURE, "no option found")


_FIELD = r'"{}"\s*:\s*"((?:[^"\\]|\\.)*)'


def _unescape(value: str) -> str:
    try:
        text: str = json.loads(f'"{value}"')
    except json.JSONDecodeError:
        return value
    return text


def _field_values(text: str, name: str) -> list[str]:
    """Values of a string field in JSON that may be cut off: closed strings whole, else the rest."""
    closed = [_unescape(v) for v in re.findall(_FIELD.format(name) + '"', text)]
    if closed:
        return closed
    m = re.search(_FIELD.format(name) + "$", text)
    return [m.group(1)] if m else []


def _unterminated_decision(
    text: str, choices: Sequence[tuple[str, str]], needs_option: bool
) -> ParsedDecision | None:
    """A decision from JSON that never closed, when its decision field is unambiguous."""
    values = {v.strip().upper() for v in _field_values(text, "decision")}
    if len(values) != 1 or not values <= {"SILENT", "INTERVENE"}:
        return None
    decision = values.pop()
    option = None
    if needs_option and decision == "INTERVENE":
        answers = {
            p.option
            for v in _field_values(text, "answer")
            if (p := parse_choice(json.dumps({"answer": v}), choices)).option is not None
        }
        if len(answers) != 1:
            return ParsedDecision(decision, FAILURE, "INTERVENE without a single option")
        option = answers.pop()
    response = _field_values(text, "proactive_response")
    reason = _field_values(text, "reason")
    return ParsedDecision(
        decision,
        REPAIRED,
        "decision read from JSON cut off before it closed",
        option=option,
        response=response[0] if response else "",
        explanation=reason[0] if reason else "",
    )


def parse_decision(
    text: str, choices: Sequence[tuple[str, str]] = (), *, needs_option: bool = False
) -> ParsedDecision:
    """SILENT / INTERVENE (and, when the task needs one, the chosen option) from `text`."""
    if not text.strip():
        return ParsedDecision(None, FAILURE, "empty output")
    decided = [obj for obj in _json_objects(text) if "decision" in obj]
    if len({str(obj["decision"]).strip().upper() for obj in decided}) > 1:
        return ParsedDecision(None, FAILURE, "several JSON decisions disagree")
    for obj in decided:
        raw = str(obj["decision"]).strip().upper()
        if raw not in ("SILENT", "INTERVENE"):
            return ParsedDecision(None, FAILURE, f"decision {obj['decision']!r} is neither")
        status = CLEAN if _is_clean_json(text, obj) and obj["decision"] == raw else REPAIRED
        option = None
        if needs_option and raw == "INTERVENE":
            parsed = parse_choice(json.dumps({"answer": obj.get("answer", "")}), choices)
            if parsed.option is None:
                return ParsedDecision(raw, FAILURE, "INTERVENE without a single option")
            option = parsed.option
        return ParsedDecision(
            raw,
            status,
            option=option,
            response=str(obj.get("proactive_response", "")),
            explanation=str(obj.get("reason", "")),
        )
    if not decided:
        cut = _unterminated_decision(text, choices, needs_option)
        if cut is not None:
            return cut
    words = {w.upper() for w in re.findall(r"\b(silent|intervene)\b", text, re.I)}
    if len(words) != 1:
        why = "both SILENT and INTERVENE" if words else "no decision"
        return ParsedDecision(None, FAILURE, why)
    decision = words.pop()
    option = None
    if needs_option and decision == "INTERVENE":
        parsed = parse_choice(text, choices)
        if parsed.option is None:
            return ParsedDecision(decision, FAILURE, "INTERVENE without a single option")
        option = parsed.option
    return ParsedDecision(decision, REPAIRED, "decision read from prose", option=option)
