"""How fast the harness's client can see an answer: the measurements behind verify's timing
bounds (harness/orchestrate/bundle/timing.py, docs/bundles.md).

A server in another process answers every query at once, with one chunk; the harness's
own client (harness/protocol/client.py, the one every run times answers with) asks it
QUERIES times over a Unix socket and prints the fastest and the median first token and
end of stream. Then the server streams CHUNKS one-character chunks as fast as it can,
STREAMS times, and the fastest rate the client saw them arrive is printed.

    .venv/bin/python tests/bench/timing_floor.py [QUERIES [CHUNKS [STREAMS]]]
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from apmbench.adapters.sdk import MemorySystem, start_server
from apmbench.adapters.sdk.types import (
    Capabilities,
    ExportedState,
    Frame,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
)
from apmbench.harness.protocol.client import SystemClient

STREAM = "stream"


class AtOnce(MemorySystem):
    """Answers at once: one chunk, or `chunks` one-character chunks when asked to stream."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks

    def describe(self) -> SystemInfo:
        return SystemInfo(name="at-once", version="1", capabilities=Capabilities())

    def reset(self, trajectory_id: str) -> None:
        pass

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        pass

    def ingest_user_turn(self, turn: UserTurn) -> None:
        pass

    def end_session(self, end: SessionEnd) -> None:
        pass

    def query(self, query: Query) -> Iterator[str]:
        if query.prompt == STREAM:
            yield from ("x" for _ in range(self.chunks))
        else:
            yield '{"answer": "A"}'

    def export_state(self) -> ExportedState:
        return ExportedState(b"")

    def import_state(self, state: ExportedState) -> None:
        pass


def _serve(address: str, chunks: int, ready: mp.synchronize.Event) -> None:
    running = start_server(AtOnce(chunks), address)
    ready.set()
    running.wait()


def main(queries: int, chunks: int, streams: int) -> None:
    with tempfile.TemporaryDirectory(prefix="floor-", dir="/tmp") as tmp:
        address = f"unix:{Path(tmp) / 's.sock'}"
        ready = mp.Event()
        server = mp.Process(target=_serve, args=(address, chunks, ready), daemon=True)
        server.start()
        ready.wait(30)
        client = SystemClient(address)
        try:
            client.wait_serving(30)
            client.reset("T")
            client.start_session(SessionStart("T", "S", "D", 0))
            ask = Query("q", 0, QueryKind.MULTIPLE_CHOICE, "", "ask")
            first, total = [], []
            for k in range(queries):
                result = client.query(dataclasses.replace(ask, query_id=f"q{k}"))
                assert result.ttft_s is not None
                first.append(result.ttft_s)
                total.append(result.total_s)
            rates = []
            for k in range(streams):
                result = client.query(dataclasses.replace(ask, query_id=f"s{k}", prompt=STREAM))
                assert result.ttft_s is not None
                rates.append((result.chunks - 1) / (result.total_s - result.ttft_s))
        finally:
            client.close()
            server.terminate()
    us = 1e6
    print(
        f"{queries} queries: first token fastest {min(first) * us:.0f} us, median "
        f"{statistics.median(first) * us:.0f} us; end of stream fastest {min(total) * us:.0f} us"
    )
    print(
        f"{streams} streams of {chunks} chunks: fastest {max(rates):,.0f} chunks/s, median "
        f"{statistics.median(rates):,.0f} chunks/s"
    )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [3000, 2000, 20][len(args) :]))
