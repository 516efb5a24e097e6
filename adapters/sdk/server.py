"""Serve a `MemorySystem` over gRPC: lifecycle checks, conversion, health, reflection."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from typing import TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from apmbench.adapters.sdk import errors, wire
from apmbench.adapters.sdk.describe_strings import describe_problems
from apmbench.adapters.sdk.system import MemorySystem
from apmbench.adapters.sdk.types import (
    ExportedState,
    Frame,
    FrameEncoding,
    StateManifest,
    SystemInfo,
)
from apmbench.v1 import memory_system_pb2 as pb
from apmbench.v1 import memory_system_pb2_grpc as pb_grpc

T = TypeVar("T")

OPEN_SESSION_CONTENT_TYPE = "application/x-apmbench-open-session"
"""A state exported while a session was open, on a server declaring `resumes_sessions`
(R14): a JSON header line (the session, its clock, the system's own content type and
version), then the system's state as it exported it."""
OPEN_SESSION_FORMAT_VERSION = 1


def wrap_open_session(state: ExportedState, session_id: str, clock_ms: int) -> ExportedState:
    header = {
        "session_id": session_id,
        "clock_ms": clock_ms,
        "content_type": state.content_type,
        "format_version": state.format_version,
    }
    line = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    return ExportedState(
        line + b"\n" + state.data, OPEN_SESSION_CONTENT_TYPE, OPEN_SESSION_FORMAT_VERSION
    )


def unwrap_open_session(data: bytes) -> tuple[str, int, ExportedState]:
    line, sep, rest = data.partition(b"\n")
    try:
        header = json.loads(line)
        session_id, clock_ms = str(header["session_id"]), int(header["clock_ms"])
        inner = ExportedState(rest, str(header["content_type"]), int(header["format_version"]))
    except (ValueError, KeyError, TypeError) as e:
        raise errors.InvalidArgument(
            f"{OPEN_SESSION_CONTENT_TYPE} state has no valid header line: {e}"
        ) from e
    if not sep or not session_id:
        raise errors.InvalidArgument(f"{OPEN_SESSION_CONTENT_TYPE} state names no session")
    return session_id, clock_ms, inner


class Lifecycle:
    """The protocol's state machine (rules R2, R3, R8), checked before method code runs."""

    def __init__(self, info: SystemInfo) -> None:
        self.info = info
        self.session_id: str | None = None
        self.last_time_ms: int | None = None
        # The clock at the open session's last item (not its last query): what a state
        # exported now reopens the session at (R14), so an export stays the same across a
        # query (R5).
        self.last_item_ms: int | None = None

    def forget(self) -> None:
        self.session_id = None
        self.last_time_ms = None
        self.last_item_ms = None

    def reopen(self, session_id: str, clock_ms: int) -> None:
        self.session_id = session_id
        self.last_time_ms = clock_ms
        self.last_item_ms = clock_ms

    def advance(self, what: str, time_ms: int) -> None:
        if self.last_time_ms is not None and time_ms < self.last_time_ms:
            raise errors.InvalidArgument(
                f"{what} at time_ms={time_ms} is earlier than the previous item at "
                f"time_ms={self.last_time_ms}: items must arrive in non-decreasing time (R2)"
            )
        self.last_time_ms = time_ms

    def require_session(self, what: str) -> str:
        if self.session_id is None:
            raise errors.FailedPrecondition(
                f"{what} outside a session: call StartSession first (R3)"
            )
        return self.session_id

    def start(self, session_id: str, time_ms: int) -> None:
        # Precedence (.proto STATUS CODES): lifecycle order before malformed arguments.
        if self.session_id is not None:
            raise errors.FailedPrecondition(
                f"StartSession({session_id!r}) while session {self.session_id!r} is open: "
                "call EndSession first (R3)"
            )
        if not session_id:
            raise errors.InvalidArgument("StartSession needs a non-empty session_id (R10)")
        self.advance("StartSession", time_ms)
        self.session_id = session_id
        self.last_item_ms = time_ms

    def end(self, session_id: str, time_ms: int) -> None:
        open_id = self.require_session("EndSession")
        if session_id != open_id:
            raise errors.InvalidArgument(
                f"EndSession({session_id!r}) does not match the open session {open_id!r} (R3)"
            )
        self.advance("EndSession", time_ms)
        self.session_id = None

    def check_frame(self, frame: Frame) -> None:
        accepted = self.info.capabilities.frame_encodings
        if frame.encoding not in accepted:
            names = ", ".join(e.value for e in accepted)
            raise errors.InvalidArgument(
                f"frame at time_ms={frame.time_ms} is {frame.encoding.value}; "
                f"this system accepts only: {names} (R8)"
            )
        if frame.width <= 0 or frame.height <= 0:
            raise errors.InvalidArgument(f"frame at time_ms={frame.time_ms} has no size")
        if (
            frame.encoding is FrameEncoding.RGB24
            and len(frame.data) != frame.width * frame.height * 3
        ):
            raise errors.InvalidArgument(
                f"rgb24 frame at time_ms={frame.time_ms} has {len(frame.data)} bytes, "
                f"expected {frame.width}x{frame.height}x3 = {frame.width * frame.height * 3}"
            )
        if not frame.data:
            raise errors.InvalidArgument(f"frame at time_ms={frame.time_ms} has no data")
        if frame.encoding is FrameEncoding.JPEG and frame.data[:2] != b"\xff\xd8":
            raise errors.InvalidArgument(
                f"jpeg frame at time_ms={frame.time_ms} does not begin with the SOI marker "
                "FF D8 (R10)"
            )

    def require_import(self) -> None:
        if not self.info.capabilities.supports_import:
            raise errors.Unimplemented(
                f"{self.info.name} declares supports_import = false: ImportState is not "
                "available (R8); use persistence mode `trust`"
            )
        if self.session_id is not None:
            raise errors.FailedPrecondition(
                f"ImportState while session {self.session_id!r} is open: call EndSession first"
            )


class MemorySystemServicer(pb_grpc.MemorySystemServicer):
    """Converts requests to plain types, checks the lifecycle and calls the method."""

    def __init__(self, system: MemorySystem) -> None:
        self._system = system
        self._info = system.describe()
        broken = describe_problems(self._info)
        if broken:
            # The harness would refuse this server at its first Describe; say so at start.
            raise errors.ApmbenchError(
                "Describe breaks rule R15 (Describe strings) of memory_system.proto: "
                + "; ".join(broken)
            )
        self._lifecycle = Lifecycle(self._info)
        # One call at a time: method code is a single-threaded state machine. The harness
        # never overlaps calls (R3); a client that does waits here until the call in
        # progress (a whole push or query stream) ends, as the .proto allows.
        self._lock = threading.Lock()

    def _guarded(self, context: grpc.ServicerContext, body: Callable[[], T]) -> T:
        with self._lock:
            try:
                return body()
            except errors.ProtocolError as e:
                context.abort(wire.status_of(e), e.message)
            except Exception as e:  # method code failed: report, keep serving
                context.abort(grpc.StatusCode.INTERNAL, f"{type(e).__name__}: {e}")
        raise AssertionError("unreachable: context.abort raises")

    def Describe(self, request: pb.DescribeRequest, context: grpc.ServicerContext) -> pb.SystemInfo:
        return wire.system_info_to_pb(self._info, item_batches=True)  # PushItemBatches below

    def Reset(self, request: pb.ResetRequest, context: grpc.ServicerContext) -> pb.ResetResponse:
        def body() -> pb.ResetResponse:
            self._system.reset(request.trajectory_id)
            self._lifecycle.forget()
            return pb.ResetResponse()

        return self._guarded(context, body)

    def StartSession(
        self, request: pb.StartSessionRequest, context: grpc.ServicerContext
    ) -> pb.StartSessionResponse:
        def body() -> pb.StartSessionResponse:
            start = wire.session_start_from_pb(request)
            self._lifecycle.start(start.session_id, start.time_ms)
            try:
                self._system.start_session(start)
            except Exception:
                self._lifecycle.session_id = None
                raise
            return pb.StartSessionResponse()

        return self._guarded(context, body)

    def PushFrames(
        self, request_iterator: Iterator[pb.StreamItem], context: grpc.ServicerContext
    ) -> pb.PushFramesResponse:
        return self._push("PushFrames", request_iterator, context)

    def PushItemBatches(
        self, request_iterator: Iterator[pb.StreamItemBatch], context: grpc.ServicerContext
    ) -> pb.PushFramesResponse:
        # R13: the batches' items, in order, exactly as PushFrames would take them.
        return self._push("PushItemBatches", wire.unbatched(request_iterator), context)

    def _push(
        self, rpc: str, items: Iterator[pb.StreamItem], context: grpc.ServicerContext
    ) -> pb.PushFramesResponse:
        def body() -> pb.PushFramesResponse:
            self._lifecycle.require_session(rpc)
            frames = turns = 0
            for msg in items:
                item = wire.item_from_pb(msg)
                if isinstance(item, Frame):
                    self._lifecycle.check_frame(item)
                    self._lifecycle.advance("frame", item.time_ms)
                    self._system.ingest_frame(item)
                    frames += 1
                else:
                    self._lifecycle.advance("user turn", item.time_ms)
                    self._system.ingest_user_turn(item)
                    turns += 1
                self._lifecycle.last_item_ms = item.time_ms
            return pb.PushFramesResponse(frames_ingested=frames, user_turns_ingested=turns)

        return self._guarded(context, body)

    def EndSession(
        self, request: pb.EndSessionRequest, context: grpc.ServicerContext
    ) -> pb.EndSessionResponse:
        def body() -> pb.EndSessionResponse:
            end = wire.session_end_from_pb(request)
            self._lifecycle.end(end.session_id, end.time_ms)
            self._system.end_session(end)
            return pb.EndSessionResponse()

        return self._guarded(context, body)

    def Query(
        self, request: pb.QueryRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.QueryChunk]:
        # The lock is held for the whole stream; `finally` releases it when the
        # client cancels too (gRPC drops the generator, which closes it).
        with self._lock:
            answer: Iterator[str] | None = None
            try:
                self._lifecycle.require_session("Query")
                query = wire.query_from_pb(request)
                self._lifecycle.advance("Query", query.time_ms)
                answer = iter(self._system.query(query))
                for piece in answer:
                    if not context.is_active():
                        return
                    if piece:
                        yield pb.QueryChunk(text=piece)
            except errors.ProtocolError as e:
                context.abort(wire.status_of(e), e.message)
            except Exception as e:
                context.abort(grpc.StatusCode.INTERNAL, f"{type(e).__name__}: {e}")
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()

    def ExportState(
        self, request: pb.ExportStateRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StateChunk]:
        def body() -> tuple[StateManifest, ExportedState]:
            state = self._system.export_state()
            open_id = self._lifecycle.session_id
            if open_id is not None and self._info.capabilities.resumes_sessions:
                clock = self._lifecycle.last_item_ms
                assert clock is not None  # set by StartSession and every item
                state = wrap_open_session(state, open_id, clock)
            return (
                wire.manifest_for(state.data, state.content_type, state.format_version),
                state,
            )

        manifest, state = self._guarded(context, body)
        size = wire.chunk_size(request.max_chunk_bytes)
        yield from wire.state_chunks(manifest, wire.split(state.data, size))

    def ImportState(
        self, request_iterator: Iterator[pb.StateChunk], context: grpc.ServicerContext
    ) -> pb.ImportStateResponse:
        def body() -> pb.ImportStateResponse:
            self._lifecycle.require_import()
            first = next(request_iterator, None)
            if first is None:
                raise errors.InvalidArgument("ImportState stream is empty: send the manifest first")
            manifest = wire.manifest_from_chunk(first)
            digest = hashlib.sha256()
            buffer = bytearray()
            for msg in request_iterator:
                piece = wire.data_from_chunk(msg)
                digest.update(piece)
                buffer += piece
            wire.check_received(manifest, len(buffer), digest.hexdigest())
            state = ExportedState(bytes(buffer), manifest.content_type, manifest.format_version)
            reopen: tuple[str, int] | None = None
            if state.content_type == OPEN_SESSION_CONTENT_TYPE:
                if not self._info.capabilities.resumes_sessions:
                    raise errors.InvalidArgument(
                        f"this state was exported in an open session, and {self._info.name} "
                        "does not declare resumes_sessions (R14): export it after EndSession"
                    )
                if state.format_version != OPEN_SESSION_FORMAT_VERSION:
                    raise errors.InvalidArgument(
                        f"{OPEN_SESSION_CONTENT_TYPE} v{state.format_version} is not supported"
                    )
                session_id, clock_ms, state = unwrap_open_session(state.data)
                reopen = (session_id, clock_ms)
            self._system.import_state(state)
            self._lifecycle.forget()
            if reopen is not None:
                self._lifecycle.reopen(*reopen)
            return pb.ImportStateResponse(bytes_imported=len(buffer))

        return self._guarded(context, body)


REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"


def _enable_reflection(server: grpc.Server, services: tuple[str, ...]) -> None:
    """Serve reflection as both grpc.reflection.v1 (what current tools such as grpcurl ask
    first) and v1alpha (what older ones ask). grpcio-reflection ships only v1alpha; the v1
    messages are field-for-field the same, so its servicer answers v1 under the v1 name."""
    names = (*services, REFLECTION_V1, reflection.SERVICE_NAME)
    servicer = reflection.ReflectionServicer(names)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1 = grpc.method_handlers_generic_handler(
        REFLECTION_V1,
        {
            "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
                servicer.ServerReflectionInfo,
                request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
                response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((v1,))


@dataclass
class RunningServer:
    """A started server: `address` is what a client dials (the bound port filled in)."""

    server: grpc.Server
    address: str
    health: health.HealthServicer

    def stop(self, grace: float | None = 1.0) -> None:
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()

    def wait(self) -> None:
        self.server.wait_for_termination()


def start_server(system: MemorySystem, address: str, *, max_workers: int = 8) -> RunningServer:
    """Start serving `system` at `address` ("unix:/path", "host:port", "host:0") and return.

    Health reports SERVING for the empty service name and for
    "apmbench.v1.MemorySystem" once this returns.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="apmbench-rpc")
    )
    pb_grpc.add_MemorySystemServicer_to_server(MemorySystemServicer(system), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    service_name = pb.DESCRIPTOR.services_by_name["MemorySystem"].full_name
    _enable_reflection(server, (service_name, health.SERVICE_NAME))
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as e:
        raise errors.Unavailable(f"cannot listen on {address!r}: {e}") from e
    if port == 0 and not address.startswith("unix:"):
        raise errors.Unavailable(f"cannot listen on {address!r}")
    server.start()
    for name in ("", service_name):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    bound = address
    if not address.startswith("unix:") and address.rsplit(":", 1)[-1] == "0":
        bound = f"{address.rsplit(':', 1)[0]}:{port}"
    return RunningServer(server, bound, health_servicer)


def serve(
    system: MemorySystem,
    address: str,
    *,
    on_ready: Callable[[str], object] | None = None,
    exit_with_parent: bool = False,
) -> None:
    """Serve `system` at `address` until SIGTERM or SIGINT, then shut down gracefully.

    With `exit_with_parent`, also stop when the parent process dies, so a
    harness killed with SIGKILL leaves no server behind.
    """
    running = start_server(system, address)
    stop = threading.Event()

    def handle(signum: int, frame: object) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handle)
    if exit_with_parent:
        parent = os.getppid()

        def watch() -> None:
            while not stop.wait(0.5):
                if os.getppid() != parent:
                    stop.set()

        threading.Thread(target=watch, daemon=True, name="parent-watch").start()
    if on_ready is not None:
        on_ready(running.address)
    stop.wait()
    running.stop()
