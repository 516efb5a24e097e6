"""PushItemBatches (protocol 1.2, R13): the harness packs items into batches for a server
that declares it, pushes one item per message to a server that does not, and both runs
give the same report, down to the exported memory's size."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from helpers.broken_servers import serve_raw

from apmbench.adapters.sdk import MemorySystem, RunningServer
from apmbench.adapters.sdk.server import MemorySystemServicer
from apmbench.adapters.systems import load_system
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.run.push_cuts import PushCuts
from apmbench.harness.runtimes import runtime_spec
from apmbench.v1 import memory_system_pb2 as pb


class CountingServicer(MemorySystemServicer):
    """The SDK's servicer, declaring PushItemBatches or not, counting each push call."""

    def __init__(self, system: MemorySystem, batches: bool) -> None:
        super().__init__(system)
        self.batches = batches
        self.calls: Counter[str] = Counter()

    def Describe(self, request: pb.DescribeRequest, context: grpc.ServicerContext) -> pb.SystemInfo:
        info = super().Describe(request, context)
        info.capabilities.accepts_item_batches = self.batches
        return info

    def PushFrames(
        self, request_iterator: Iterator[pb.StreamItem], context: grpc.ServicerContext
    ) -> pb.PushFramesResponse:
        self.calls["PushFrames"] += 1
        return super().PushFrames(request_iterator, context)

    def PushItemBatches(
        self, request_iterator: Iterator[pb.StreamItemBatch], context: grpc.ServicerContext
    ) -> pb.PushFramesResponse:
        self.calls["PushItemBatches"] += 1
        if not self.batches:  # a 1.1 server has no such method
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "PushItemBatches is not served")
        return super().PushItemBatches(request_iterator, context)


def report_without_timings(run: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((run / "report.json").read_text())
    report.pop("latency", None)
    return report


@pytest.fixture
def servers() -> Iterator[list[RunningServer]]:
    running: list[RunningServer] = []
    yield running
    for server in running:
        server.stop(grace=None)


@pytest.mark.slow
def test_batched_and_one_per_message_runs_report_the_same(
    mini: Path, tmp_path: Path, sock_dir: Path, servers: list[RunningServer]
) -> None:
    reports, calls = {}, {}
    for batches in (True, False):
        address = f"unix:{sock_dir}/{'batches' if batches else 'single'}"
        # frame-archive keeps every frame it is given: a frame lost or changed on the way
        # changes its exported memory, which the report's storage figures count.
        servicer = CountingServicer(load_system("frame-archive"), batches)
        servers.append(serve_raw(servicer, address))
        out = tmp_path / f"run-{batches}"
        evaluate(
            EvaluateOptions(
                dataset=mini,
                out=out,
                runtime=runtime_spec(endpoint=address),
                persistence=Persistence.RESET,
                push=PushCuts(seed=1),  # the same random cuts in both runs: call for call
            )
        )
        reports[batches], calls[batches] = report_without_timings(out), servicer.calls
    assert calls[True]["PushItemBatches"] > 0 and calls[True]["PushFrames"] == 0, calls
    assert calls[False]["PushFrames"] > 0 and calls[False]["PushItemBatches"] == 0, calls
    assert calls[True]["PushItemBatches"] == calls[False]["PushFrames"]  # one call per flush
    assert reports[True] == reports[False]
