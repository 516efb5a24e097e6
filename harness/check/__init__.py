"""`apmbench-grpc check`: a conformance suite any memory-system server can be run against,
and the audits `evaluate --audit` runs during real runs.

    from apmbench.harness.check import CHECKS, run_suite, select

Each check names the rule of memory_system.proto it holds the server to
(`rules.RULES`) and ends pass, fail or not applicable, with what it saw and a
hint. Checks talk to the server only through `apmbench.harness.protocol.client`.
"""

from apmbench.harness.check.context import CheckSettings
from apmbench.harness.check.model import Check, CheckReport, CheckResult
from apmbench.harness.check.suite import CHECKS, run_suite, select
from apmbench.harness.check.verdicts import Outcome

__all__ = [
    "CHECKS",
    "Check",
    "CheckReport",
    "CheckResult",
    "CheckSettings",
    "Outcome",
    "run_suite",
    "select",
]
