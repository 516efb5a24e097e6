"""Reading answers out of raw model text, with deterministic repair (appendix B.5).

B.5 marks a probe incorrect "only when no unambiguous task output can be
recovered": what can be read without guessing is repaired, everything else is
an unrecoverable format failure, counted per task and system:

- multiple choice: a JSON object with an "answer" field naming one option (by
  its letter, "(B)", "Option B", "B. text", or its exact option text); else, in
  prose, exactly one option named unambiguously: a letter in an answer-giving
  phrase ("Answer: b", "I choose C"), parenthesised, quoted, heading a line, or
  a capital on its own; or the exact text of one choice, alone or after "the
  answer is". The article "a" is never option A. Two different options named
  anywhere (also a letter next to another option's text) = failure.
- decisions: a JSON object with "decision" SILENT or INTERVENE (any case);
  else, in JSON cut off before it closed (an output that ran to the length
  limit), one "decision" field value; else exactly one of the two words in
  the text not under negation ("I should not intervene" states no decision).
  When the task needs an option, INTERVENE also needs one, read as above.

Several JSON objects that disagree (two different answers or decisions) are
a failure, never a pick; repeated identical objects are repaired.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

CLEAN = "clean"
REPAIRED = "repaired"
FAILURE = "failure"


class Graded(TypedDict):
    """What every suite's grading of one raw answer holds: the option it parsed (None:
    none), how it parsed (`format`: ok, repaired or failure) and why."""

    answer: str | None
    format: str
    format_reason: str


class ChoiceGraded(Graded):
    """A multiple-choice answer checked against its correct option."""

    correct_option_id: str
    correct: bool


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


def _json_objects(text: str) -> list[dict[str, object]]:
    """Every top-level JSON object in `text`, in order (code fences ignored)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, object]] = []
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


def _is_clean_json(text: str, obj: dict[str, object]) -> bool:
    try:
        return bool(json.loads(text.strip()) == obj)
    except json.JSONDecodeError:
        return False


def _normal(text: str) -> str:
    """Option text compared loosely: case, outer quotes and a final full stop aside."""
    return " ".join(text.strip().strip("\"'`*").strip().rstrip(".!").split()).lower()


def _options_by_text(text: str, choices: Sequence[tuple[str, str]]) -> set[str]:
    """Options whose exact text `text` is (an article in front aside: "a cup" names "cup")."""
    said = _normal(text)
    bare = re.sub(r"^(?:a|an|the)\s+", "", said)
    return {o for o, t in choices if _normal(t) and _normal(t) in (said, bare)}


def _option_in_value(value: str, options: Sequence[str]) -> str | None:
    """An option letter from a field value like "B", "(B)", "B.", "Option B", "B: text"."""
    m = re.fullmatch(
        r"\s*(?:option\s*)?[\(\[]?\s*([A-Za-z])\s*[\)\]]?\s*(?:[.:)\-]\s*.*)?", value, re.I | re.S
    )
    if m and m.group(1).upper() in options:
        return m.group(1).upper()
    return None


def _choice_in_value(value: str, choices: Sequence[tuple[str, str]]) -> set[str]:
    """What an "answer" field value names: its letter, else its exact option text, else prose.

    A letter followed by the text of another option ("B. a red mug" with the
    mug as A) names both, so the caller reports the contradiction.
    """
    options = [o for o, _ in choices]
    letter = _option_in_value(value, options)
    if letter is None:
        return _options_by_text(value, choices) or _options_in_prose(value, choices)
    rest = re.sub(
        r"^\s*(?:option\s*)?[\(\[]?\s*[A-Za-z]\s*[\)\]]?\s*[.:)\-]?", "", value, flags=re.I
    )
    return {letter} | (_options_by_text(rest, choices) if rest.strip() else set())


# Where prose names an option by its letter. A letter counts when an answer-giving
# phrase introduces it ("the answer is b", "I choose (C)"), when it is
# parenthesised, quoted or heads a line ("B. a blue plate"), or when it is a
# capital standing alone ("it is D."). "a"/"A" followed by an ordinary word is the
# article ("The answer is a cup."), never option A; other lower-case letters
# count only where a phrase introduces them, so "plan b" names nothing.
_LETTER = re.compile(r"(?<![\w'’.\-])([A-Ea-e])(?![\w'’\-]|\.\w)")
_INTRODUCED = re.compile(
    r"(?:\banswer|\bchoice|\boption|\bpick|\bchoose|\bselect(?:ed)?|\bgo(?:ing)? with"
    r"|\bcorrect one|\bcorrect)"
    r"(?:\s+(?:is|would be|should be|will be|must be|=|:|-))?[\s:=\-]*[\(\[\"'*]*\s*$",
    re.I,
)
# Words after which a capital "A" is still the letter ("A and C", "A is right").
_AFTER_LETTER = frozenset(
    {"and", "or", "nor", "is", "was", "would", "seems", "looks", "because", "since", "but"}
    | {"vs", "versus", "then", "as", "if"}
)
_CONNECTOR = re.compile(
    r"\s*(?:,|/|&|\||\bor\b|\band\b|\bnor\b|\bvs\.?|\bversus\b)\s*[\(\[]?\s*$", re.I
)
_LIST = re.compile(r"^\s*\(?([A-E])\)?(?:\s*(?:,|and|or|/|&|\|)\s*\(?([A-E])\)?)+\s*\.?\s*$")
# An answer-giving phrase followed by nothing but an option's text ("My choice is a bowl.").
_ANSWER_PHRASE = re.compile(
    r"^\s*(?:(?:the|my|final)\s+)*(?:correct\s+)?(?:answer|choice|option)\s*(?:is|:|=|-)\s*(.+?)\s*$",
    re.I | re.S,
)


def _letters(text: str) -> list[str]:
    """Option letters that `text` names, in order, by the rules above."""
    named: list[str] = []
    last_end = -1
    for m in _LETTER.finditer(text):
        letter, start, end = m.group(1), m.start(), m.end()
        before, after = text[:start], text[end:]
        line_head = text[text.rfind("\n", 0, start) + 1 : start]
        introduced = bool(_INTRODUCED.search(before))
        chained = last_end >= 0 and bool(_CONNECTOR.fullmatch(text[last_end:start]))
        wrapped = bool(re.search(r"[\(\[]\s*$", before) and re.match(r"\s*[\)\]]", after))
        quoted = bool(re.search(r"[\"'`]$", before) and re.match(r"[\"'`]", after))
        leading = bool(re.fullmatch(r"[\s*#>\-]*", line_head)) and bool(
            re.match(r"\s*(?:[.:)\]]|\*\*|$)", after)
        )
        next_word = re.match(r"\s+([a-z]+)", after)
        article = (
            letter in "aA"
            and next_word is not None
            and next_word.group(1) not in _AFTER_LETTER
            and not (wrapped or quoted)
            and (letter == "a" or not introduced)
        )
        if article:
            continue
        if introduced or chained or wrapped or quoted or leading or letter.isupper():
            named.append(letter.upper())
            last_end = end
    return named


def _options_in_prose(text: str, choices: Sequence[tuple[str, str]]) -> set[str]:
    options = {o for o, _ in choices}
    if _LIST.match(text):
        return set(re.findall(r"[A-E]", text)) & options
    named = set(_letters(text))
    # "B. a red mug" with the mug as A names two options, whichever was meant.
    for line in re.finditer(r"^[\s*#>\-]*[\(\[]?([A-E])[\)\]]?\s*[.:)\-]\s*(\S.*)$", text, re.M):
        named |= _options_by_text(line.group(2), choices)
    named &= options
    if not named:
        named = _options_by_text(text, choices)
        phrase = _ANSWER_PHRASE.match(text)
        if not named and phrase:
            named = _options_by_text(phrase.group(1), choices)
    return named


def parse_choice(text: str, choices: Sequence[tuple[str, str]]) -> ParsedChoice:
    """The option chosen in `text`; `choices` are (option_id, text) pairs."""
    if not text.strip():
        return ParsedChoice(None, FAILURE, "empty output")
    answers = [obj for obj in _json_objects(text) if "answer" in obj]
    if answers:
        values = [obj["answer"] for obj in answers]
        in_values = [_choice_in_value(str(v), choices) if v is not None else set() for v in values]
        if any(len(n) > 1 for n in in_values):
            both = ", ".join(sorted(next(n for n in in_values if len(n) > 1)))
            return ParsedChoice(None, FAILURE, f"answer field names several options: {both}")
        picked = [next(iter(n), None) for n in in_values]
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


# A decision word under negation ("I should not intervene yet", "no need to
# intervene", "Not silent") states no decision: it is skipped, never flipped into
# the other word, since "not SILENT" might be hedging rather than INTERVENE.
_NEGATION = re.compile(
    r"\b(?:not|no|never|neither|nor|without|cannot|avoid|refrain|instead of|rather than)\b"
    r"|n['’]t\b",
    re.I,
)
# Where the reach of a negation ends: punctuation, or a conjunction that starts a
# new clause ("I won't stay silent and will intervene").
_CLAUSE = re.compile(r"[.;:!?,()\n]|\b(?:but|so|and|or|then|therefore|hence|because)\b", re.I)


def _decision_words(text: str) -> set[str]:
    """SILENT / INTERVENE as stated, not negated, in prose."""
    words: set[str] = set()
    for m in re.finditer(r"\b(silent|intervene)\b", text, re.I):
        clause_start = max((c.end() for c in _CLAUSE.finditer(text, 0, m.start())), default=0)
        if not _NEGATION.search(text, clause_start, m.start()):
            words.add(m.group(1).upper())
    return words


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
            if parsed.status != CLEAN:
                status = REPAIRED
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
    words = _decision_words(text)
    if len(words) != 1:
        if words:
            why = "both SILENT and INTERVENE"
        elif re.search(r"\b(?:silent|intervene)\b", text, re.I):
            why = "SILENT/INTERVENE only under negation"
        else:
            why = "no decision"
        return ParsedDecision(None, FAILURE, why)
    decision = words.pop()
    option = None
    if needs_option and decision == "INTERVENE":
        parsed = parse_choice(text, choices)
        if parsed.option is None:
            return ParsedDecision(decision, FAILURE, "INTERVENE without a single option")
        option = parsed.option
    return ParsedDecision(decision, REPAIRED, "decision read from prose", option=option)
