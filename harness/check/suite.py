"""Runs the named checks against one server, each isolated, and assembles the report.

Every check starts from its own Reset and trajectory id, so one failing
check cannot make the next one fail. A check that loses the server (it
exits, or stops answering) fails; the server is then restarted for the
remaining checks when the runtime can, else they are not applicable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from apmbench.adapters.sdk import errors, wire
from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.adapters.sdk.types import PROTOCOL_VERSION
from apmbench.harness.check import (
    checks_batches,
    checks_dialogue,
    checks_frames,
    checks_lifecycle,
    checks_query,
    checks_resume,
    checks_rules,
    checks_service,
    checks_slow,
    checks_state,
)
from apmbench.harness.check.context import CheckContext, CheckSettings
from apmbench.harness.check.model import Check, CheckReport, CheckResult
from apmbench.harness.check.rules import RULES, Rule
from apmbench.harness.check.verdicts import CheckError, Outcome
from apmbench.harness.errors import ConfigError, WireRuleError
from apmbench.harness.protocol.describe import describe_info
from apmbench.harness.runtimes.base import Runtime

# Order matters: Describe first (later checks need it), the cancellation check
# after the others that need a responsive server, the slow ones last.
CHECKS: tuple[Check, ...] = (
    *checks_service.CHECKS,
    *checks_lifecycle.CHECKS,
    *checks_frames.CHECKS,
    *checks_batches.CHECKS,
    *checks_rules.CHECKS,
    *(c for c in checks_query.CHECKS if c.name != "query-cancel"),
    *checks_dialogue.CHECKS,
    *checks_state.CHECKS,
    *checks_resume.CHECKS,
    checks_query.query_cancel,
    *checks_slow.CHECKS,
)
BY_NAME = {c.name: c for c in CHECKS}
EXPORT_RULE_OWNERS = {"MANIFEST": "export-manifest", "STATE-STREAM": "export-manifest",
                      "R7": "export-chunking"}  # fmt: skip
"""The check that fails when an export breaks each state-stream rule; every other check
whose export breaks it is not applicable, so one defect is blamed once, under its rule."""


def select(only: Iterable[str] = (), skip: Iterable[str] = (), quick: bool = False) -> list[Check]:
    """The checks to run, in suite order; unknown names are a ConfigError listing the known."""
    only, skip = list(only), list(skip)
    unknown = [n for n in [*only, *skip] if n not in BY_NAME]
    if unknown:
        raise ConfigError(
            f"unknown check {', '.join(unknown)}: the checks are {', '.join(BY_NAME)}"
        )
    chosen = [c for c in CHECKS if (not only or c.name in only) and c.name not in skip]
    if quick:
        chosen = [c for c in chosen if not c.slow or c.name in only]
    # Describe's answer is what every later check sends frames and queries by.
    needed = checks_service.describe_version
    if needed not in chosen and any(c.needs_describe for c in chosen):
        chosen.insert(0, needed)
    return chosen


def _unexpected(error: errors.ProtocolError) -> tuple[str, str]:
    code = wire.status_of(error).name
    return (
        f"{error.rpc or 'a call'} failed with {code}: {error.message}",
        "every call this check makes is valid protocol use; see the server's output for why it "
        "failed",
    )


def run_suite(
    runtime: Runtime,
    checks: list[Check],
    settings: CheckSettings | None = None,
    on_result: Callable[[CheckResult], None] = lambda r: None,
) -> CheckReport:
    """Start the server in `runtime`, run `checks` in order, stop nothing (the caller does)."""
    settings = settings or CheckSettings()
    started = time.perf_counter()
    results: list[CheckResult] = []

    def add(result: CheckResult) -> None:
        results.append(result)
        on_result(result)

    try:
        # A server someone else runs is checked even without a health service (that check
        # fails), as its runtime connects to it.
        client = runtime.start_for_check()
    except (errors.ProtocolError, ApmbenchError) as e:
        if isinstance(e, ConfigError):
            raise
        reason = f"the server did not start: {e}" + _log_tail(runtime)
        hint = "see the server's output; it must report SERVING when ready"
        add(CheckResult("start", Outcome.FAIL, RULES["HEALTH"], reason, hint))
        for c in checks:
            add(CheckResult(c.name, Outcome.NOT_APPLICABLE, c.rule, "the server did not start"))
        return CheckReport(_target(runtime, None), tuple(results), time.perf_counter() - started)
    ctx = CheckContext(runtime, client, settings)
    gone = ""
    for c in checks:
        if gone:
            add(CheckResult(c.name, Outcome.NOT_APPLICABLE, c.rule, gone))
            continue
        if c.needs_describe and ctx.described is None:
            reason = "the harness has no usable Describe of this server (see describe-version)"
            add(CheckResult(c.name, Outcome.NOT_APPLICABLE, c.rule, reason))
            continue
        t0 = time.perf_counter()
        outcome, reason, hint, details = Outcome.PASS, "", "", {}
        rule = c.rule
        lost = False
        since = c.since
        try:
            passed = c.run(ctx)
            reason, details = passed.reason, passed.details
        except CheckError as e:
            outcome, reason, hint = e.outcome, e.reason, e.hint
            since = e.since or since
        except WireRuleError as e:
            outcome, rule, reason, hint = _export_broken(c, e)
        except (errors.Unavailable, errors.DeadlineExceeded, errors.Cancelled) as e:
            outcome, (reason, hint) = Outcome.FAIL, _unexpected(e)
            lost = True
        except errors.ProtocolError as e:
            outcome, (reason, hint) = Outcome.FAIL, _unexpected(e)
        if outcome is Outcome.FAIL and not lost:
            outcome, reason = _by_declared_version(ctx, since, reason)
        add(CheckResult(c.name, outcome, rule, reason, hint, time.perf_counter() - t0, details))
        if lost:
            gone = _recover(ctx, c.name)
    return CheckReport(_target(runtime, ctx), tuple(results), time.perf_counter() - started)


def _version(text: str) -> tuple[int, ...] | None:
    """(1, 3) for "1.3"; None for anything else (R15 refuses such a Describe anyway)."""
    parts = text.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def judged_by(ctx: CheckContext | None) -> str:
    """The protocol version a server is judged by: the one its Describe declares, or this
    harness's when it declares none this harness can read."""
    declared = ctx.described.protocol_version if ctx and ctx.described else ""
    return declared if _version(declared) else PROTOCOL_VERSION


def _by_declared_version(ctx: CheckContext, since: str, reason: str) -> tuple[Outcome, str]:
    """A failure of a rule newer than the version the server declares is a warning: its
    author could not know the rule (docs/PROTOCOL.md, evolution policy)."""
    declared, introduced = _version(judged_by(ctx)), _version(since)
    if declared is None or introduced is None or introduced <= declared:
        return Outcome.FAIL, reason
    return Outcome.WARN, (
        f"rule new in {since}: {reason} (the server declares protocol {judged_by(ctx)}, so "
        f"this is a warning, not a failure; it fails once the server declares {since})"
    )


def _export_broken(c: Check, e: WireRuleError) -> tuple[Outcome, Rule, str, str]:
    """A rule the client enforces on every reply, broken: a state stream's rule fails in the
    check that owns it and makes the others not applicable; any other fails where seen."""
    owner = EXPORT_RULE_OWNERS.get(e.rule) if e.rpc == "ExportState" else None
    if owner is None:
        return (Outcome.FAIL, c.rule, *_unexpected(e))
    if owner == c.name:
        return Outcome.FAIL, RULES[e.rule], e.message, e.hint
    reason = (
        f"this check needs a valid export, and ExportState breaks rule {e.rule} "
        f"({RULES[e.rule].title}; see {owner}): {e.message}"
    )
    return Outcome.NOT_APPLICABLE, c.rule, reason, e.hint


def _log_tail(runtime: Runtime, lines: int = 5) -> str:
    """The end of the server's output, which usually says why it did not start."""
    last = runtime.log_tail(lines)
    return "; its last output: " + " | ".join(last.splitlines()) if last else ""


def _recover(ctx: CheckContext, name: str) -> str:
    """After a check lost the server: restart it, or say why the rest cannot run."""
    if not ctx.runtime.can_restart:
        try:
            ctx.client.describe_unchecked()
            return ""
        except errors.ProtocolError:
            return f"the server stopped answering during {name}"
    try:
        ctx.client = ctx.runtime.restart()
    except ApmbenchError as e:
        return f"the server could not be restarted after {name}: {e}"
    return ""


def _target(runtime: Runtime, ctx: CheckContext | None) -> dict[str, object]:
    try:
        facts = runtime.describe()
    except (AssertionError, ApmbenchError):  # a runtime that never started has few facts
        facts = {"kind": runtime.kind}
    target: dict[str, object] = {"runtime": facts, "judged_by": judged_by(ctx)}
    if ctx is not None and ctx.described is not None:
        target["system"] = describe_info(ctx.described)
    return target
