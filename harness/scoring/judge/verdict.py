"""Strict reading of the judge's reply: the one JSON object the A.3 rubric asks for.

Nothing is repaired here. A reply that is not exactly that object (Markdown
fences, text around it, a missing or extra field, a score outside 1-5, an
enum value not offered, a duplicated key) is a `JudgeReplyError` saying what
is wrong; the caller retries a bounded number of times and then records the
failure. A lenient reader would turn judge noise into scores nobody can
reproduce from the rubric.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from apmbench.harness.errors import JudgeReplyError
from apmbench.harness.json_types import JsonObject

CRITERIA: dict[str, tuple[str, ...]] = {
    "task_fidelity": ("pass", "partial", "fail"),
    "historical_or_registration_grounding": ("pass", "partial", "fail", "not_applicable"),
    "current_trigger_or_silence_grounding": ("pass", "partial", "fail"),
    "factual_support": ("pass", "partial", "fail"),
    "usefulness": ("pass", "partial", "fail", "not_applicable"),
}
FIELDS = ("score", "criterion_checks", "critical_issues", "justification")


@dataclass(frozen=True)
class Verdict:
    score: int
    criterion_checks: dict[str, str]
    critical_issues: list[str]
    justification: str

    def as_dict(self) -> JsonObject:
        return asdict(self)


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise JudgeReplyError("duplicated field " + ", ".join(repr(k) for k in dupes))
    return dict(pairs)


def _exact_keys(obj: dict[str, object], expected: tuple[str, ...], what: str) -> None:
    missing = [k for k in expected if k not in obj]
    extra = sorted(k for k in obj if k not in expected)
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing))
    if extra:
        problems.append("unexpected " + ", ".join(extra))
    if problems:
        raise JudgeReplyError(f"{what}: " + "; ".join(problems))


def parse_verdict(reply: str) -> Verdict:
    """The verdict in `reply`, or `JudgeReplyError` naming the first problem found."""
    text = reply.strip()
    if not text:
        raise JudgeReplyError("empty reply")
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        raise JudgeReplyError(
            f"not exactly one JSON object ({e.msg} at character {e.pos})"
        ) from None
    if not isinstance(obj, dict):
        raise JudgeReplyError(f"the reply is a JSON {type(obj).__name__}, not an object")
    _exact_keys(obj, FIELDS, "fields")
    score = obj["score"]
    # bool is an int in Python; `true` is not a score.
    if type(score) is not int or not 1 <= score <= 5:
        raise JudgeReplyError(f"score must be one integer from 1 through 5, got {score!r}")
    checks = obj["criterion_checks"]
    if not isinstance(checks, dict):
        raise JudgeReplyError("criterion_checks must be an object")
    _exact_keys(checks, tuple(CRITERIA), "criterion_checks")
    for name, allowed in CRITERIA.items():
        if checks[name] not in allowed:
            raise JudgeReplyError(
                f"criterion_checks.{name} must be one of {'|'.join(allowed)}, got {checks[name]!r}"
            )
    issues = obj["critical_issues"]
    if not isinstance(issues, list) or not all(isinstance(i, str) for i in issues):
        raise JudgeReplyError("critical_issues must be an array of strings")
    justification = obj["justification"]
    if not isinstance(justification, str) or not justification.strip():
        raise JudgeReplyError("justification must be a non-empty string")
    return Verdict(score, dict(checks), list(issues), justification)
