"""Broken servers below the SDK: they break rules the SDK itself enforces (time order) or leave
out what its serve() adds (health, reflection), so the checks can be shown to catch them.

Built on the generated servicer base, as a method author who skips the SDK would; tests only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from apmbench.adapters.sdk import MemorySystem, RunningServer
from apmbench.adapters.sdk.server import Lifecycle, MemorySystemServicer
from apmbench.v1 import memory_system_pb2 as pb
from apmbench.v1 import memory_system_pb2_grpc as pb_grpc


class _TimeBlind(Lifecycle):
    """Takes every time as it comes: nothing is ever 'earlier than the previous item'."""

    def advance(self, what: str, time_ms: int) -> None:
        self.last_time_ms = time_ms


class TimeBlindServicer(MemorySystemServicer):
    """The SDK's servicer with the time-order check (R2) taken out."""

    def __init__(self, system: MemorySystem) -> None:
        super().__init__(system)
        self._lifecycle = _TimeBlind(self._info)


def serve_raw(
    servicer: pb_grpc.MemorySystemServicer,
    address: str,
    *,
    with_health: bool = True,
    with_reflection: bool = True,
) -> RunningServer:
    """Serve `servicer` as the SDK's start_server would, optionally without health/reflection."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pb_grpc.add_MemorySystemServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    service = pb.DESCRIPTOR.services_by_name["MemorySystem"].full_name
    names = [service]
    if with_health:
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        names.append(health.SERVICE_NAME)
    if with_reflection:
        reflection.enable_server_reflection((*names, reflection.SERVICE_NAME), server)
    server.add_insecure_port(address)
    server.start()
    return RunningServer(server, address, health_servicer)


class _EndsAnySession(Lifecycle):
    """Closes the open session whatever id EndSession names."""

    def end(self, session_id: str, time_ms: int) -> None:
        super().end(self.require_session("EndSession"), time_ms)


class EndsAnySessionServicer(MemorySystemServicer):
    """The SDK's servicer without the EndSession id check (rule SESSION-ID)."""

    def __init__(self, system: MemorySystem) -> None:
        super().__init__(system)
        self._lifecycle = _EndsAnySession(self._info)


class FirstOfBatchServicer(MemorySystemServicer):
    """Declares accepts_item_batches (as the SDK does) but ingests only each batch's first
    item, where R13 says every item, as PushFrames would."""

    def PushItemBatches(
        self, request_iterator: Iterator[pb.StreamItemBatch], context: grpc.ServicerContext
    ) -> pb.PushFramesResponse:
        def firsts() -> Iterator[pb.StreamItem]:
            for batch in request_iterator:
                yield batch.items[0]

        return self._push("PushItemBatches", firsts(), context)


class KindBlindServicer(MemorySystemServicer):
    """Takes a user turn without kind as a registration, a frame without encoding as JPEG
    and ignores an empty item, where R10 says INVALID_ARGUMENT."""

    def PushFrames(
        self, request_iterator: Iterator[pb.StreamItem], context: grpc.ServicerContext
    ) -> pb.PushFramesResponse:
        def mended() -> Iterator[pb.StreamItem]:
            for msg in request_iterator:
                which = msg.WhichOneof("item")
                if which is None:
                    continue
                if which == "user_turn" and not msg.user_turn.kind:
                    msg.user_turn.kind = pb.USER_TURN_KIND_REGISTRATION
                if which == "frame" and not msg.frame.encoding:
                    msg.frame.encoding = pb.FRAME_ENCODING_RGB24
                yield msg

        return super().PushFrames(mended(), context)

    def Query(
        self, request: pb.QueryRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.QueryChunk]:
        if not request.kind:
            request.kind = pb.QUERY_KIND_MULTIPLE_CHOICE
        yield from super().Query(request, context)


class LaxShaServicer(MemorySystemServicer):
    """Reads any manifest sha256 (63 digits, upper case) as a digest to compare, so a
    malformed one ends in DATA_LOSS instead of INVALID_ARGUMENT."""

    def ImportState(
        self, request_iterator: Iterator[pb.StateChunk], context: grpc.ServicerContext
    ) -> pb.ImportStateResponse:
        def mended() -> Iterator[pb.StateChunk]:
            for msg in request_iterator:
                if msg.WhichOneof("chunk") == "manifest":
                    sha = msg.manifest.sha256
                    if len(sha) != 64 or sha != sha.lower():
                        msg.manifest.sha256 = "0" * 64
                yield msg

        return super().ImportState(mended(), context)


class FieldsFirstServicer(MemorySystemServicer):
    """Checks a Query's kind before the lifecycle: INVALID_ARGUMENT where the .proto's
    precedence says FAILED_PRECONDITION (rule PRECEDENCE)."""

    def Query(
        self, request: pb.QueryRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.QueryChunk]:
        if not request.kind:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "query has no kind")
        yield from super().Query(request, context)


class UpperShaServicer(MemorySystemServicer):
    """Exports the manifest's sha256 in upper-case hex, where MANIFEST says lower case."""

    def ExportState(
        self, request: pb.ExportStateRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StateChunk]:
        for chunk in super().ExportState(request, context):
            if chunk.WhichOneof("chunk") == "manifest":
                chunk.manifest.sha256 = chunk.manifest.sha256.upper()
            yield chunk


class IgnoresChunkSizeServicer(MemorySystemServicer):
    """Sends 1 MiB chunks whatever max_chunk_bytes asks (R7)."""

    def ExportState(
        self, request: pb.ExportStateRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StateChunk]:
        yield from super().ExportState(pb.ExportStateRequest(), context)


class FencedServicer(MemorySystemServicer):
    """Wraps every answer in a Markdown code fence, which R12 calls a format failure."""

    def Query(
        self, request: pb.QueryRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.QueryChunk]:
        yield pb.QueryChunk(text="```json\n")
        yield from super().Query(request, context)
        yield pb.QueryChunk(text="\n```")


class _QueryKeepsClock(Lifecycle):
    """Refuses a Query earlier than the last time, but does not move the clock with it."""

    def advance(self, what: str, time_ms: int) -> None:
        if what != "Query" or (self.last_time_ms is not None and time_ms < self.last_time_ms):
            super().advance(what, time_ms)


class QueryKeepsClockServicer(MemorySystemServicer):
    """Takes an item earlier than a Query already answered (R2 says a Query moves the clock)."""

    def __init__(self, system: MemorySystem) -> None:
        super().__init__(system)
        self._lifecycle = _QueryKeepsClock(self._info)


class StrictServicer(MemorySystemServicer):
    """The SDK's servicer that also records every way its client breaks the protocol: a call
    while another is in progress (R3) and a state chunk over 2 MiB (R7; the SDK refuses it
    too). `violations` stays empty for a client that keeps every rule."""

    def __init__(self, system: MemorySystem) -> None:
        super().__init__(system)
        self.violations: list[str] = []
        self._busy = threading.Lock()

    def _enter(self, rpc: str) -> None:
        if not self._busy.acquire(blocking=False):
            self.violations.append(f"{rpc} while another call was in progress")
            self._busy.acquire()

    def __getattribute__(self, name: str) -> object:
        attr = object.__getattribute__(self, name)
        if name not in RPCS:
            return attr

        def call(request: object, context: grpc.ServicerContext) -> object:
            self._enter(name)
            try:
                if name == "ImportState":
                    request = self._capped(request)  # type: ignore[arg-type]
                result = attr(request, context)  # type: ignore[operator]
                if name in ("Query", "ExportState"):
                    return iter(list(result))  # the whole stream inside the busy window
                return result
            finally:
                self._busy.release()

        return call

    def _capped(self, chunks: Iterator[pb.StateChunk]) -> Iterator[pb.StateChunk]:
        for chunk in chunks:
            if chunk.WhichOneof("chunk") == "data" and len(chunk.data) > 2 << 20:
                self.violations.append(f"an ImportState chunk of {len(chunk.data)} bytes")
            yield chunk


RPCS = frozenset(pb.DESCRIPTOR.services_by_name["MemorySystem"].methods_by_name) - {"Describe"}
