"""What is wrong with a streamed answer (R11), if anything: shared by `check` and the audit."""

from __future__ import annotations

from apmbench.harness.protocol.client import QueryResult


def streaming_problem(result: QueryResult) -> str | None:
    if not result.pieces:
        return "streamed no text"
    if not result.pieces[0].strip():
        return (
            f"the first chunk is only whitespace ({result.pieces[0]!r}): time to first token "
            "would be measured on it, before any answer exists"
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
