"""Text that came from a system under evaluation, made safe to print.

A system's output (its log, the messages of its gRPC errors, its Describe
strings) is data. Printed through Rich, a `[/bogus]` in it would be read as
markup and crash the harness; printed anywhere, terminal escape sequences in it
would retitle the window, clear the screen or hide lines in a CI log. Every
place that shows such text goes through `plain` (files, plain echo) or `markup`
(a Rich console).
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any

from rich.markup import escape

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), DCS/SOS/PM/APC strings, any other
# two-byte ESC sequence, then the remaining C0 and C1 controls except tab and newline.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b.?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|\x9d[^\x07\x9c]*[\x07\x9c]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]",
    re.DOTALL,
)


def plain(text: object) -> str:
    """`text` without terminal control sequences or control characters (tab and newline kept;
    a carriage return would let a line overwrite the one before it, so it goes too)."""
    return _CONTROL.sub("", str(text))


def markup(text: object) -> str:
    """`text` for a Rich console: without control sequences, and every `[` taken literally."""
    return escape(plain(text))


def plain_values(
    _logger: Any, _method: str, event: MutableMapping[str, object]
) -> MutableMapping[str, object]:
    """A structlog processor: every string value of a log line made `plain`."""
    return {k: plain(v) if isinstance(v, str) else v for k, v in event.items()}
