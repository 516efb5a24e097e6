"""Time to first token cannot be bought with a blank chunk: the harness times the first
chunk with a visible character (R11), so a server that sends whitespace at once and its
answer after its model ran is timed at the answer."""

from __future__ import annotations

from pathlib import Path

from helpers.broken_systems import BlankFirstChunk, Honest

from apmbench.adapters.sdk import Query, QueryKind, SessionStart, start_server
from apmbench.harness.protocol.client import SystemClient


def _ttft(system: Honest, address: str) -> tuple[float, str]:
    server = start_server(system, address)
    try:
        with SystemClient(address) as client:
            client.wait_serving(30)
            client.reset("t")
            client.start_session(SessionStart("t", "S1", "DAY1", 1000))
            result = client.query(Query("q", 2000, QueryKind.MULTIPLE_CHOICE, "", "which?"))
            assert result.ttft_s is not None
            return result.ttft_s, result.text
    finally:
        server.stop(grace=None)


def test_a_blank_first_chunk_does_not_start_the_clock(sock_dir: Path) -> None:
    blank, text = _ttft(BlankFirstChunk(), f"unix:{sock_dir}/blank")
    assert text.startswith(" ") and text.strip()  # the blank chunk did arrive first
    assert blank >= BlankFirstChunk.THINK_S, blank
    honest, _ = _ttft(Honest(), f"unix:{sock_dir}/honest")
    assert honest < BlankFirstChunk.THINK_S, honest
