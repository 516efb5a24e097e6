"""How a check ends: pass (with what it saw), fail, warn or not applicable, with the reason
and a hint. What checks work with (context.py) raises these and a check's result (model.py)
carries them: apart from both, neither module needs the other to say how a check ended."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from apmbench.adapters.sdk.errors import ApmbenchError


class Outcome(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "n/a"
    WARN = "warn"
    """A recommendation not followed (e.g. no server reflection): reported, never failing."""


class CheckError(ApmbenchError):
    """Raised inside a check to end it with a verdict other than pass."""

    outcome = Outcome.FAIL

    def __init__(self, reason: str, hint: str = "", since: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint
        self.since = since
        """The protocol version whose text added the part of the rule that was broken, when
        it is later than the check's own `since` ("" = the check's)."""


class CheckFailed(CheckError):
    """The server broke the check's rule; `reason` says what was seen, `hint` what to fix."""


class CheckWarning(CheckError):
    """The server skips something recommended, not required; `reason` says what."""

    outcome = Outcome.WARN


class NotApplicable(CheckError):
    """The check cannot apply to this server or runtime; `reason` says why."""

    outcome = Outcome.NOT_APPLICABLE


@dataclass(frozen=True)
class Passed:
    """What a passing check saw, in a sentence (numbers included)."""

    reason: str
    details: dict[str, object] = field(default_factory=dict)
