"""What is wrong with a streamed answer (R11), if anything: shared by `check` and the audit."""

from __future__ import annotations

from apmbench.harness.protocol.blank import is_blank
from apmbench.harness.protocol.client import QueryResult


def streaming_problem(result: QueryResult) -> str | None:
    if not result.pieces:
        return "streamed no text"
    # Blank as the client's time to first token decides it (`blank.is_blank`), so a first
    # chunk that buys no TTFT there is flagged here: whitespace, and also what `strip()`
    # keeps but renders nothing (a zero-width space, a BOM, a lone combining mark).
    if is_blank(result.pieces[0]):
        return (
            "the first chunk is blank, only whitespace or invisible characters "
            f"({result.pieces[0]!r}, code points {_points(result.pieces[0])}): it has no "
            "visible character, and time to first token would be measured on it, before "
            "any answer exists"
        )
    if len(result.pieces) > 1 and not result.arrivals_s[0] < result.arrivals_s[-1]:
        return "the first chunk did not arrive before the last"
    cumulative = len(result.pieces) > 1 and all(
        later.startswith(earlier) and len(later) > len(earlier)
        for earlier, later in zip(result.pieces, result.pieces[1:], strict=False)
    )
    if cumulative:
        return (
            "each chunk repeats the one before it (cumulative snapshots), so the answer "
            f"reads {''.join(result.pieces)[:80]!r}"
        )
    return None


def _points(text: str) -> str:
    """`text`'s code points (U+200B ...): the repr shows some invisible ones as themselves."""
    shown = " ".join(f"U+{ord(c):04X}" for c in text[:8])
    return shown + (" ..." if len(text) > 8 else "")
