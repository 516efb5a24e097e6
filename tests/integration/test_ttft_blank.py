"""Time to first token cannot be bought with a blank chunk: the harness times the first
chunk with a visible character (R11), so a server that sends whitespace at once and its
answer after its model ran is timed at the answer."""

from __future__ import annotations

from pathlib import Path

from helpers.broken_systems import BlankFirstChunk

from apmbench.adapters.sdk import Query, QueryKind, SessionStart, start_server
from apmbench.harness.protocol.client import QueryResult, SystemClient


def _asked(address: str) -> QueryResult:
    server = start_server(BlankFirstChunk(), address)
    try:
        with SystemClient(address) as client:
            client.wait_serving(30)
            client.reset("t")
            client.start_session(SessionStart("t", "S1", "DAY1", 1000))
            return client.query(Query("q", 2000, QueryKind.MULTIPLE_CHOICE, "", "which?"))
    finally:
        server.stop(grace=None)


def test_a_blank_first_chunk_does_not_start_the_clock(sock_dir: Path) -> None:
    result = _asked(f"unix:{sock_dir}/blank")
    # The blank chunk arrived first; the clock starts at the next, after the model's sleep
    # (a lower bound whatever the machine's load).
    assert result.pieces[0] == " " and result.pieces[1].strip(), result.pieces
    assert result.ttft_s == result.arrivals_s[1] > result.arrivals_s[0]
    assert result.ttft_s >= BlankFirstChunk.THINK_S
