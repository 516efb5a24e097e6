"""Reading answers out of raw model text, with deterministic repair (appendix B.5).

What can be repaired without guessing is repaired; everything else is an
unrecoverable format failure, counted per task and system:

- multiple choice: a JSON object with an "answer" field naming one option;
  else, in prose, exactly one option named unambiguously ("Answer: B", "(B)",
  "B.", "option B", a lone letter, or the exact text of one choice). Two
  different options named = failure.
- decisions: a JSON object with "decision" SILENT or INTERVENE (any case);
  else exactly one of the two words in the text. For ERA, an INTERVENE
  decision also needs one option, read as above.
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
    for obj in _json_objects(text):
        if "answer" in obj:
            value = obj["answer"]
            option = _option_in_value(str(value), options) if value is not None else None
            if option is not None:
                exact = _is_clean_json(text, obj) and str(value) == option
                return ParsedChoice(option, CLEAN if exact else REPAIRED)
            return ParsedChoice(None, FAILURE, f"answer field {value!r} names no single option")
    named = _options_in_prose(text, choices)
    if len(named) == 1:
        return ParsedChoice(named.pop(), REPAIRED, "option read from prose")
    if len(named) > 1:
        return ParsedChoice(None, FAILURE, "several options: " + ", ".join(sorted(named)))
    return ParsedChoice(None, FAILURE, "no option found")


def parse_decision(
    text: str, choices: Sequence[tuple[str, str]] = (), *, needs_option: bool = False
) -> ParsedDecision:
    """SILENT / INTERVENE (and, for ERA, the chosen option) from `text`."""
    if not text.strip():
        return ParsedDecision(None, FAILURE, "empty output")
    for obj in _json_objects(text):
        if "decision" not in obj:
            continue
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
