"""Calling the server on purpose wrongly, and judging the status code it answers with."""

from __future__ import annotations

from collections.abc import Callable

from apmbench.adapters.sdk import errors, wire
from apmbench.harness.check.verdicts import CheckFailed


def code_of(error: type[errors.ProtocolError]) -> str:
    return wire.STATUS_BY_ERROR[error].name


def expect_error(
    expected: type[errors.ProtocolError],
    what: str,
    call: Callable[[], object],
    hint: str,
    since: str = "",
) -> str:
    """Run `call`, which must fail with `expected`; returns the server's message.

    Anything else (success, another status) is a CheckFailed that says what
    was sent, what came back and what was due; `since` names the protocol version that
    added this expectation when it is later than the check's.
    """
    want = code_of(expected)
    try:
        call()
    except expected as e:
        return e.message
    except errors.ProtocolError as e:
        # A code the .proto does not allow for the call arrives as a WireRuleError naming it.
        got = getattr(e, "status", "") or wire.status_of(e).name
        raise CheckFailed(
            f"{what}: answered {got} ({e.message}); expected {want}", hint, since
        ) from e
    raise CheckFailed(f"{what}: accepted; expected {want}", hint, since)
