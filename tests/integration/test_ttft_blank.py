"""Time to first token cannot be bought with a blank chunk: the harness times the first
chunk with a visible character (R11, `apmbench.harness.protocol.blank`), so a server that
sends whitespace, or characters that render nothing, at once and its answer after its
model ran is timed at the answer. A visible filler is the rule's limit: it buys time to
first token, not time to answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.broken_systems import BlankFirstChunk, FillerFirstChunk, ZeroWidthFirstChunk

from apmbench.adapters.sdk import MemorySystem, Query, QueryKind, SessionStart, start_server
from apmbench.harness.orchestrate.scoring import answered_at
from apmbench.harness.protocol.client import QueryResult, SystemClient
from apmbench.harness.scoring.answers import parse_choice

CHOICES = [("A", "one"), ("B", "two"), ("C", "three"), ("D", "four")]


def _asked(system: MemorySystem, address: str) -> QueryResult:
    server = start_server(system, address)
    try:
        with SystemClient(address) as client:
            client.wait_serving(30)
            client.reset("t")
            client.start_session(SessionStart("t", "S1", "DAY1", 1000))
            return client.query(Query("q", 2000, QueryKind.MULTIPLE_CHOICE, "", "which?"))
    finally:
        server.stop(grace=None)


def test_a_blank_first_chunk_does_not_start_the_clock(sock_dir: Path) -> None:
    result = _asked(BlankFirstChunk(), f"unix:{sock_dir}/blank")
    # The blank chunk arrived first; the clock starts at the next, after the model's sleep
    # (a lower bound whatever the machine's load).
    assert result.pieces[0] == " " and result.pieces[1].strip(), result.pieces
    assert result.ttft_s == result.arrivals_s[1] > result.arrivals_s[0]
    assert result.ttft_s >= BlankFirstChunk.THINK_S


def test_a_zero_width_first_chunk_does_not_start_the_clock(sock_dir: Path) -> None:
    # U+200B survives `str.strip()`: judged by whitespace alone this server was timed at
    # its first chunk, well before its answer existed.
    result = _asked(ZeroWidthFirstChunk(), f"unix:{sock_dir}/zw")
    assert result.pieces[0] == "\u200b" and result.pieces[0].strip(), result.pieces
    assert result.ttft_s == result.arrivals_s[1] > result.arrivals_s[0]
    assert result.ttft_s >= ZeroWidthFirstChunk.THINK_S


def _answer_time(result: QueryResult) -> float | None:
    pieces = [len(piece) for piece in result.pieces]
    return answered_at(
        result.text, pieces, result.arrivals_s, lambda text: parse_choice(text, CHOICES).option
    )


@pytest.mark.parametrize("system", [FillerFirstChunk, BlankFirstChunk, ZeroWidthFirstChunk])
def test_time_to_answer_is_not_bought_by_any_first_chunk(
    system: type[BlankFirstChunk], sock_dir: Path
) -> None:
    result = _asked(system(), f"unix:{sock_dir}/answer")
    answered = _answer_time(result)
    # The answer parses only once its chunk arrived, after the model's sleep.
    assert answered is not None and answered == result.arrivals_s[1]
    assert answered >= system.THINK_S and result.total_s >= system.THINK_S


def test_a_visible_filler_buys_time_to_first_token_only(sock_dir: Path) -> None:
    # The limit of R11 (docs/PROTOCOL.md): "Hmm, " is text a reader sees, so it starts the
    # clock at once. No rule on characters can tell a filler from the start of an answer;
    # what stays honest is time to answer, which the leaderboard places runs by.
    result = _asked(FillerFirstChunk(), f"unix:{sock_dir}/filler")
    assert result.pieces[0] == "Hmm, ", result.pieces
    assert result.ttft_s == result.arrivals_s[0]
    assert result.ttft_s < FillerFirstChunk.THINK_S
    answered = _answer_time(result)
    assert answered is not None and answered >= FillerFirstChunk.THINK_S > result.ttft_s
