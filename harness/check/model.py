"""What a check is and what it reports: a named rule with its run, each run's result, and
the report of a whole suite (the verdicts a run ends with are in verdicts.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from apmbench.harness.check.rules import RULES, Rule
from apmbench.harness.check.verdicts import Outcome, Passed

if TYPE_CHECKING:
    from apmbench.harness.check.context import CheckContext


@dataclass(frozen=True)
class Check:
    name: str
    rule: Rule
    summary: str
    """What the check verifies, in a line."""
    run: Callable[[CheckContext], Passed]
    """Returns how it passed; raises CheckFailed or NotApplicable otherwise."""
    slow: bool = False
    """Restarts the server or moves >64 MiB: skipped by --quick."""
    needs_describe: bool = True
    """Runs only once Describe gave an answer this harness accepts (a refused server is
    not checked further: the harness would not evaluate it)."""
    since: str = "1.0"
    """The protocol version whose text introduced the rule: a server declaring an older
    version is warned, not failed, when it breaks it (docs/PROTOCOL.md, evolution policy)."""


def check(
    name: str,
    rule: str,
    summary: str,
    *,
    slow: bool = False,
    needs_describe: bool = True,
    since: str = "1.0",
) -> Callable[[Callable[[CheckContext], Passed]], Check]:
    """Decorate a function as a check of `rule` (an id in RULES), a rule of version `since`."""

    def wrap(fn: Callable[[CheckContext], Passed]) -> Check:
        return Check(name, RULES[rule], summary, fn, slow, needs_describe, since)

    return wrap


@dataclass(frozen=True)
class CheckResult:
    name: str
    outcome: Outcome
    rule: Rule
    reason: str
    hint: str = ""
    seconds: float = 0.0
    details: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "outcome": self.outcome.value,
            "rule": self.rule.id,
            "rule_title": self.rule.title,
            "rule_text": self.rule.quote,
            "reason": self.reason,
            "hint": self.hint,
            "seconds": round(self.seconds, 3),
            "details": self.details,
        }


@dataclass(frozen=True)
class CheckReport:
    target: dict[str, object]
    """What was checked: runtime facts and, when it answered, the system's Describe."""
    results: tuple[CheckResult, ...]
    seconds: float

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.outcome is Outcome.FAIL]

    @property
    def ok(self) -> bool:
        return not self.failed

    def counts(self) -> dict[str, int]:
        return {o.value: sum(r.outcome is o for r in self.results) for o in Outcome}

    def as_dict(self) -> dict[str, object]:
        return {
            "format": "apmbench-check",
            "format_version": 1,
            "ok": self.ok,
            "counts": self.counts(),
            "seconds": round(self.seconds, 3),
            "target": self.target,
            "checks": [r.as_dict() for r in self.results],
        }
