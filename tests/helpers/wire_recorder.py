"""A recording server: the SDK's servicer that writes down every call as it arrives on the
wire (its kind, its wall-clock start and end, and for a push its items), so a test can ask
what a system could have learnt from the wire alone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc

from apmbench.adapters.sdk import MemorySystem, wire
from apmbench.adapters.sdk.server import MemorySystemServicer
from apmbench.adapters.sdk.types import Frame
from apmbench.v1 import memory_system_pb2 as pb


@dataclass(frozen=True)
class Item:
    time_ms: int
    kind: str
    """"frame", or the user turn's kind ("question", "registration", "interval_marker")."""


@dataclass
class Call:
    rpc: str
    """"Reset", "StartSession", "Push", "Query", "EndSession", "ExportState", "ImportState"."""
    started_s: float
    ended_s: float = 0.0
    time_ms: int | None = None
    """StartSession's and Query's time on the trajectory clock."""
    items: list[Item] = field(default_factory=list)


class RecordingServicer(MemorySystemServicer):
    """The SDK's servicer, serving `system` unchanged, with a log of every call."""

    def __init__(self, system: MemorySystem) -> None:
        super().__init__(system)
        self.calls: list[Call] = []

    def _open(self, rpc: str, time_ms: int | None = None) -> Call:
        call = Call(rpc, time.monotonic(), time_ms=time_ms)
        self.calls.append(call)
        return call

    def Reset(self, request: pb.ResetRequest, context: grpc.ServicerContext) -> pb.ResetResponse:
        call = self._open("Reset")
        try:
            return super().Reset(request, context)
        finally:
            call.ended_s = time.monotonic()

    def StartSession(
        self, request: pb.StartSessionRequest, context: grpc.ServicerContext
    ) -> pb.StartSessionResponse:
        call = self._open("StartSession", wire.session_start_from_pb(request).time_ms)
        try:
            return super().StartSession(request, context)
        finally:
            call.ended_s = time.monotonic()

    def EndSession(
        self, request: pb.EndSessionRequest, context: grpc.ServicerContext
    ) -> pb.EndSessionResponse:
        call = self._open("EndSession")
        try:
            return super().EndSession(request, context)
        finally:
            call.ended_s = time.monotonic()

    def _push(
        self, rpc: str, items: Iterator[pb.StreamItem], context: grpc.ServicerContext
    ) -> pb.PushFramesResponse:
        call = self._open("Push")

        def seen() -> Iterator[pb.StreamItem]:
            for msg in items:
                item = wire.item_from_pb(msg)
                kind = "frame" if isinstance(item, Frame) else item.kind.value
                call.items.append(Item(item.time_ms, kind))
                yield msg

        try:
            return super()._push(rpc, seen(), context)
        finally:
            call.ended_s = time.monotonic()

    def Query(
        self, request: pb.QueryRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.QueryChunk]:
        call = self._open("Query", wire.query_from_pb(request).time_ms)
        try:
            yield from super().Query(request, context)
        finally:
            call.ended_s = time.monotonic()

    def ExportState(
        self, request: pb.ExportStateRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StateChunk]:
        call = self._open("ExportState")
        try:
            yield from super().ExportState(request, context)
        finally:
            call.ended_s = time.monotonic()

    def ImportState(
        self, request_iterator: Iterator[pb.StateChunk], context: grpc.ServicerContext
    ) -> pb.ImportStateResponse:
        call = self._open("ImportState")
        try:
            return super().ImportState(request_iterator, context)
        finally:
            call.ended_s = time.monotonic()
