"""Rule R15 of memory_system.proto: the strings a server's Describe may hold.

Describe's name, version and details are written into report.md, compare.md,
report.html, the terminal and the leaderboard. Held to an identifier alphabet
and a length here, a name cannot forge a table row, close an HTML tag or move a
terminal's cursor, whatever the report that shows it forgets to escape. The
SDK's servicer refuses to serve a SystemInfo that breaks the rule (its author
learns at start) and the harness refuses a server whose Describe breaks it
(exit 3), before any other call.
"""

from __future__ import annotations

import re

from apmbench.adapters.sdk.types import SystemInfo

IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
"""name, version and every details key: 1-64 characters, letters, digits, `. _ + -`."""
PROTOCOL = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}")
MAX_DETAILS = 32
MAX_DETAIL_CHARS = 256
_SHOWN = 40
"""How much of an offending value a message quotes (repr: its control bytes escaped)."""


def _quoted(value: str) -> str:
    cut = value if len(value) <= _SHOWN else value[:_SHOWN] + "..."
    return repr(cut)


def describe_problems(info: SystemInfo) -> list[str]:
    """What in `info` breaks R15, each as a sentence naming the field; [] when it holds."""
    problems = []
    for what, value in (("name", info.name), ("version", info.version)):
        if IDENTIFIER.fullmatch(value) is None:
            problems.append(
                f"{what} {_quoted(value)} is not an identifier (1-64 letters, digits, "
                "'.', '_', '+', '-'; the first a letter or digit)"
            )
    if PROTOCOL.fullmatch(info.protocol_version) is None:
        problems.append(f"protocol_version {_quoted(info.protocol_version)} is not '1.<minor>'")
    if len(info.details) > MAX_DETAILS:
        problems.append(f"{len(info.details)} details, more than {MAX_DETAILS}")
    for key, value in info.details.items():
        if IDENTIFIER.fullmatch(key) is None:
            problems.append(f"details key {_quoted(key)} is not an identifier")
        elif len(value) > MAX_DETAIL_CHARS or not value.isprintable():
            problems.append(
                f"details[{key}] {_quoted(value)} is not at most {MAX_DETAIL_CHARS} printable "
                "characters (no newline or control character)"
            )
    return problems
