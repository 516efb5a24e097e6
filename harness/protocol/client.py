"""The harness's gRPC client: the only harness module that touches generated types.

Every call has a deadline; failures come back as the SDK's error hierarchy
(`apmbench.adapters.sdk.errors`), raised `from` the original gRPC error.
Timing is taken here, on the harness's monotonic clock, because a server-side
interceptor cannot time a streamed reply.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, ClassVar, TypeVar, cast

import grpc
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from apmbench.adapters.sdk import errors, wire
from apmbench.adapters.sdk.describe_strings import describe_problems
from apmbench.adapters.sdk.types import (
    PROTOCOL_VERSION,
    Query,
    SessionEnd,
    SessionStart,
    StateManifest,
    StreamItem,
    SystemInfo,
)
from apmbench.harness import shown
from apmbench.harness.errors import WireRuleError
from apmbench.harness.protocol import wire_rules
from apmbench.harness.protocol.blank import first_visible
from apmbench.v1 import memory_system_pb2 as pb
from apmbench.v1 import memory_system_pb2_grpc as pb_grpc

T = TypeVar("T")
# The value of grpc.experimental.ChannelOptions.SingleThreadedUnaryStream.
_SINGLE_THREADED_STREAM = "SingleThreadedUnaryStream"
_CHANNEL_OPTIONS = [
    (_SINGLE_THREADED_STREAM, 1),
    # A server that is still starting refuses the first connection; gRPC's
    # default 1 s reconnect backoff would then add up to a second per start.
    ("grpc.initial_reconnect_backoff_ms", 20),
    ("grpc.min_reconnect_backoff_ms", 20),
    ("grpc.max_reconnect_backoff_ms", 500),
]


@dataclass(frozen=True)
class Deadlines:
    """Seconds allowed per call. Generous by default: real models are slow. Each is a
    command-line flag (`FLAGS`), which a timeout's message names."""

    control: float = 60.0
    push: float = 600.0
    query: float = 600.0
    state: float = 1800.0
    end_session: float = 1800.0

    FLAGS: ClassVar[dict[str, str]] = {
        "control": "--control-timeout",
        "push": "--push-timeout",
        "query": "--query-timeout",
        "state": "--state-timeout",
        "end_session": "--end-session-timeout",
    }
    # Which deadline each RPC runs under; the rest (Describe, Reset, health...) are control.
    RPCS: ClassVar[dict[str, str]] = {
        "PushFrames": "push",
        "PushItemBatches": "push",
        "Query": "query",
        "ExportState": "state",
        "ImportState": "state",
        "EndSession": "end_session",
    }

    def of(self, rpc: str) -> tuple[float, str]:
        """The deadline `rpc` runs under, in seconds, and the flag that sets it."""
        name = self.RPCS.get(rpc, "control")
        seconds: float = getattr(self, name)
        return seconds, self.FLAGS[name]


@dataclass(frozen=True)
class ByteLimit:
    """At most `bytes` of exported state; a bigger export fails naming `flag`."""

    bytes: int
    flag: str
    what: str = "the cap on exported state per snapshot"


@dataclass(frozen=True)
class QueryResult:
    text: str
    chunks: int
    ttft_s: float | None
    total_s: float
    pieces: tuple[str, ...] = ()
    """The non-empty chunks as they arrived (their concatenation is `text`)."""
    arrivals_s: tuple[float, ...] = ()
    """When each of `pieces` arrived, in seconds after the call was sent."""


@dataclass(frozen=True)
class MethodShape:
    """One RPC of a service as reflection describes it (full message names)."""

    input_type: str
    output_type: str
    client_streaming: bool
    server_streaming: bool


@dataclass(frozen=True)
class PushResult:
    frames: int
    user_turns: int
    seconds: float


@dataclass(frozen=True)
class ExportResult:
    manifest: StateManifest
    seconds: float


def _major(version: str) -> str:
    return version.split(".", 1)[0]


def _cut(text: str) -> str:
    """A server's string shown in a message before R15 was checked: without control
    characters, at most 40 characters."""
    return shown.plain(text)[:40]


class SystemClient:
    """A connection to one memory system server."""

    def __init__(self, address: str, deadlines: Deadlines | None = None) -> None:
        self.address = address
        self.deadlines = deadlines or Deadlines()
        # A streamed Query otherwise costs a helper thread per call in grpcio;
        # the harness reads each stream to its end on the calling thread.
        self._channel = grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)
        self._stub = pb_grpc.MemorySystemStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> SystemClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, rpc: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except grpc.RpcError as e:
            error = wire.error_from_rpc(rpc, e)
            code_of = getattr(e, "code", None)
            code = code_of() if callable(code_of) else grpc.StatusCode.UNKNOWN
            problem = wire_rules.status_problem(rpc, code.name)
            if problem is not None:
                raise wire_rules.violation(
                    rpc, "STATUS", f"{problem}: {error.message}", status=code.name
                ) from e
            if (
                isinstance(error, errors.DeadlineExceeded)
                and code is grpc.StatusCode.DEADLINE_EXCEEDED
            ):
                seconds, flag = self.deadlines.of(rpc)
                error = errors.DeadlineExceeded(
                    f"{error.message} ({rpc} has {seconds:g} s: raise {flag} if the system "
                    "needs longer)",
                    rpc=error.rpc or rpc,
                )
            raise error from e

    # -- readiness ------------------------------------------------------------

    def wait_serving(self, timeout_s: float) -> None:
        """Block until health reports SERVING, or raise `Unavailable` with what was seen.

        A server without the health service raises `Unimplemented` at once. (A runtime
        that also watches its process asks `not_serving` itself, between its own checks.)
        """
        deadline = time.monotonic() + timeout_s
        last: str | None = "no answer"
        while time.monotonic() < deadline:
            last = self.not_serving()
            if last is None:
                return
            time.sleep(0.05)
        raise self.never_served(timeout_s, last)

    def not_serving(self) -> str | None:
        """One health check: None when the server reports SERVING, else what it said (or
        why it could not be asked). A server without the health service raises
        `Unimplemented`: waiting longer cannot help it."""
        try:
            reply = self._health.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
        except grpc.RpcError as e:
            error = wire.error_from_rpc("Check", e)
            if isinstance(error, errors.Unimplemented):
                raise errors.Unimplemented(
                    f"server at {self.address} does not serve grpc.health.v1.Health "
                    f"({error.message}); the SDK's serve() adds it",
                    rpc="Check",
                ) from e
            return str(error)
        if reply.status == health_pb2.HealthCheckResponse.SERVING:
            return None
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    def never_served(self, timeout_s: float, last: str | None) -> errors.Unavailable:
        return errors.Unavailable(
            f"server at {self.address} did not report SERVING within {timeout_s:.0f} s "
            f"(last health answer: {last})"
        )

    # -- calls ----------------------------------------------------------------

    def describe_unchecked(self) -> SystemInfo:
        """Describe as the server answers it, without refusing another protocol version."""
        reply = self._call(
            "Describe",
            lambda: self._stub.Describe(pb.DescribeRequest(), timeout=self.deadlines.control),
        )
        return wire.system_info_from_pb(reply)

    def describe(self) -> SystemInfo:
        """Describe, refused unless it holds R9 (the major version) and R15 (its strings are
        written into reports) and declares a frame encoding."""
        info = self.describe_unchecked()
        if _major(info.protocol_version) != _major(PROTOCOL_VERSION):
            raise errors.FailedPrecondition(
                f"the system speaks protocol {_cut(info.protocol_version) or '(none)'}, "
                f"this harness speaks {PROTOCOL_VERSION}: rebuild the server with a matching SDK",
                rpc="Describe",
            )
        broken = describe_problems(info)
        if broken:
            raise WireRuleError(
                "the server broke rule R15 (Describe strings) of memory_system.proto: "
                + "; ".join(broken),
                rule="R15",
                rpc="Describe",
                hint="give name, version and details keys as identifiers (letters, digits, "
                "'.', '_', '+', '-'; at most 64) and details values as printable text",
            )
        if not info.capabilities.frame_encodings:
            raise errors.FailedPrecondition(
                f"system {info.name!r} declares no frame encoding it accepts", rpc="Describe"
            )
        return info

    def reset(self, trajectory_id: str) -> None:
        self._call(
            "Reset",
            lambda: self._stub.Reset(
                pb.ResetRequest(trajectory_id=trajectory_id), timeout=self.deadlines.control
            ),
        )

    def start_session(self, start: SessionStart) -> None:
        self._call(
            "StartSession",
            lambda: self._stub.StartSession(
                wire.session_start_to_pb(start), timeout=self.deadlines.control
            ),
        )

    def push(
        self,
        items: Iterable[StreamItem],
        *,
        batched: bool = False,
        batch_bytes: int = wire.BATCH_BYTES,
    ) -> PushResult:
        """Push items in one PushFrames stream, or with `batched` (for a server that declares
        `accepts_item_batches`) one PushItemBatches stream of batches of up to `batch_bytes`
        of frames; time is measured around the call only."""
        if batched:
            batches = list(wire.item_batches(items, batch_bytes))
            started = time.perf_counter()
            reply = self._call(
                "PushItemBatches",
                lambda: self._stub.PushItemBatches(iter(batches), timeout=self.deadlines.push),
            )
            return PushResult(
                reply.frames_ingested, reply.user_turns_ingested, time.perf_counter() - started
            )
        messages = [wire.item_to_pb(item) for item in items]
        started = time.perf_counter()
        reply = self._call(
            "PushFrames",
            lambda: self._stub.PushFrames(iter(messages), timeout=self.deadlines.push),
        )
        seconds = time.perf_counter() - started
        return PushResult(reply.frames_ingested, reply.user_turns_ingested, seconds)

    def push_malformed(self, what: str, time_ms: int) -> PushResult:
        """PushFrames with one item that breaks rule R10 (`what` in MALFORMED_ITEMS).

        For conformance checks; the harness never sends these in a run.
        """
        if what == "turn-without-kind":
            message = pb.StreamItem(user_turn=pb.UserTurn(time_ms=time_ms, text="hello"))
        elif what == "turn-of-unknown-kind":
            # A value no minor version of the protocol has: counts as no kind (R10).
            turn = pb.UserTurn(
                time_ms=time_ms,
                kind=cast("pb.UserTurnKind.ValueType", UNKNOWN_ENUM_VALUE),
                text="hi",
            )
            message = pb.StreamItem(user_turn=turn)
        elif what == "frame-without-encoding":
            frame = pb.Frame(time_ms=time_ms, width=2, height=2, data=bytes(12))
            message = pb.StreamItem(frame=frame)
        elif what == "empty-item":
            message = pb.StreamItem()
        else:
            raise ValueError(f"unknown malformed item {what!r}: one of {MALFORMED_ITEMS}")
        reply = self._call(
            "PushFrames",
            lambda: self._stub.PushFrames(iter([message]), timeout=self.deadlines.push),
        )
        return PushResult(reply.frames_ingested, reply.user_turns_ingested, 0.0)

    def query_without_kind(self, query: Query, unknown: bool = False) -> str:
        """`query` sent with QUERY_KIND_UNSPECIFIED, or with `unknown` a kind no version of
        the protocol has (rule R10); returns the text, if any."""
        request = wire.query_to_pb(query)
        request.kind = (
            cast("pb.QueryKind.ValueType", UNKNOWN_ENUM_VALUE)
            if unknown
            else pb.QUERY_KIND_UNSPECIFIED
        )

        def run() -> str:
            call = self._stub.Query(request, timeout=self.deadlines.query)
            return "".join(chunk.text for chunk in call)

        return self._call("Query", run)

    def end_session(self, end: SessionEnd) -> float:
        started = time.perf_counter()
        self._call(
            "EndSession",
            lambda: self._stub.EndSession(
                wire.session_end_to_pb(end), timeout=self.deadlines.end_session
            ),
        )
        return time.perf_counter() - started

    def query(
        self, query: Query, timeout_s: float | None = None, cancel_after: int | None = None
    ) -> QueryResult:
        """Ask and read the streamed answer; `timeout_s` overrides the query deadline.

        `cancel_after` = n cancels the call once n non-empty chunks have arrived,
        as a client that gives up would (the conformance checks use it); the
        result then holds what arrived.
        """
        request = wire.query_to_pb(query)
        pieces: list[str] = []
        arrivals: list[float] = []
        started = time.perf_counter()

        def run() -> None:
            call = self._stub.Query(request, timeout=timeout_s or self.deadlines.query)
            for chunk in call:
                if chunk.text:
                    arrivals.append(time.perf_counter() - started)
                    pieces.append(chunk.text)
                    if cancel_after is not None and len(pieces) >= cancel_after:
                        # A stream call is also a grpc.Call and a grpc.Future; the stubs type
                        # it as an iterator (and Call's cancel without types: Future's has).
                        cast("grpc.Future[object]", call).cancel()
                        return

        self._call("Query", run)
        total = time.perf_counter() - started
        # R11: the first chunk is not blank, because time to first token is taken on it. A
        # server that sends a blank first (a red team's way to buy a near-zero TTFT while its
        # model still runs) is timed at its first chunk with a visible character. Blank is
        # `blank.is_blank`, not `str.strip()`: a zero-width space survives `strip()` and
        # bought 0.001 s against an honest 0.306 s.
        first = first_visible(pieces)
        ttft = None if first is None else arrivals[first]
        return QueryResult(
            "".join(pieces), len(pieces), ttft, total, tuple(pieces), tuple(arrivals)
        )

    def export_state(
        self, sink: BinaryIO, max_chunk_bytes: int = 0, limit: ByteLimit | None = None
    ) -> ExportResult:
        """Stream the state into `sink`, verifying length and sha256 against the manifest.

        With a `limit`, a manifest that declares more, or a stream that sends more, is
        refused at once: nothing past the limit is read or written.
        """
        started = time.perf_counter()

        def broken(rule: str, seen: str) -> errors.ProtocolError:
            return wire_rules.violation("ExportState", rule, seen)

        def over(size: int, how: str) -> errors.ResourceExhausted:
            assert limit is not None
            return errors.ResourceExhausted(
                f"the system {how} {size} bytes of state, over {limit.what} "
                f"({limit.bytes} bytes, {limit.flag}): raise {limit.flag} (or give 'none') "
                "if the system really needs that much",
                rpc="ExportState",
            )

        def run() -> StateManifest:
            call = self._stub.ExportState(
                pb.ExportStateRequest(max_chunk_bytes=max_chunk_bytes),
                timeout=self.deadlines.state,
            )
            try:
                return read(iter(call))
            finally:
                # A refused stream is not read to its end; the server need not send the rest.
                cast("grpc.Future[object]", call).cancel()

        def read(stream: Iterator[pb.StateChunk]) -> StateManifest:
            first = next(stream, None)
            if first is None:
                raise broken("STATE-STREAM", "the stream ended without a manifest")
            if (problem := wire_rules.shape_problem(0, first.WhichOneof("chunk"))) is not None:
                raise broken("STATE-STREAM", problem)
            m = first.manifest
            if (problem := wire_rules.sha256_problem(m.sha256)) is not None:
                raise broken("MANIFEST", problem)
            manifest = StateManifest(m.total_bytes, m.sha256, m.content_type, m.format_version)
            if (problem := wire_rules.label_problem(m.content_type, m.format_version)) is not None:
                raise broken("R16", problem)
            if limit is not None and manifest.total_bytes > limit.bytes:
                raise over(manifest.total_bytes, "declared")
            digest = hashlib.sha256()
            received = 0
            for index, msg in enumerate(stream, start=1):
                if (
                    problem := wire_rules.shape_problem(index, msg.WhichOneof("chunk"))
                ) is not None:
                    raise broken("STATE-STREAM", problem)
                piece = msg.data
                if (
                    problem := wire_rules.chunk_problem(index, len(piece), max_chunk_bytes)
                ) is not None:
                    raise broken("R7", problem)
                received += len(piece)
                if limit is not None and received > limit.bytes:
                    raise over(received, "sent at least")
                digest.update(piece)
                sink.write(piece)
            seen = wire_rules.received_problem(
                manifest.total_bytes, manifest.sha256, received, digest.hexdigest()
            )
            if seen is not None:
                raise broken("MANIFEST", seen)
            return manifest

        try:
            manifest = self._call("ExportState", run)
        except errors.ProtocolError as e:
            e.rpc = e.rpc or "ExportState"
            raise
        return ExportResult(manifest, time.perf_counter() - started)

    def export_to_file(
        self, path: Path, max_chunk_bytes: int = 0, limit: ByteLimit | None = None
    ) -> ExportResult:
        tmp = path.with_name(path.name + ".partial")
        try:
            with tmp.open("wb") as sink:
                result = self.export_state(sink, max_chunk_bytes, limit)
        except BaseException:
            # A refused or broken export leaves nothing on disk.
            tmp.unlink(missing_ok=True)
            raise
        tmp.replace(path)
        return result

    def import_state(
        self, manifest: StateManifest, source: BinaryIO, max_chunk_bytes: int = 0
    ) -> int:
        size = wire.chunk_size(max_chunk_bytes)

        def pieces() -> Iterator[bytes]:
            while piece := source.read(size):
                yield piece

        reply = self._call(
            "ImportState",
            lambda: self._stub.ImportState(
                wire.state_chunks(manifest, pieces()), timeout=self.deadlines.state
            ),
        )
        return reply.bytes_imported

    def import_file(self, manifest: StateManifest, path: Path, max_chunk_bytes: int = 0) -> int:
        with path.open("rb") as source:
            return self.import_state(manifest, source, max_chunk_bytes)

    def import_raw(self, manifest: StateManifest | None, pieces: Iterable[bytes]) -> int:
        """ImportState exactly as given: no manifest first when `manifest` is None.

        For conformance checks that must send a malformed stream; runs use `import_state`.
        """
        head = [] if manifest is None else [next(wire.state_chunks(manifest, ()))]
        # Every call check makes keeps every rule but the one it tests: R7's 2 MiB cap too.
        cap = wire_rules.MAX_CHUNK_BYTES
        chunks = [
            *head,
            *(
                pb.StateChunk(data=piece[at : at + cap])
                for piece in pieces
                for at in range(0, max(len(piece), 1), cap)
            ),
        ]
        reply = self._call(
            "ImportState",
            lambda: self._stub.ImportState(iter(chunks), timeout=self.deadlines.state),
        )
        return reply.bytes_imported

    # -- the standard services (conformance checks) -----------------------------

    def health_status(self, service: str = "") -> str:
        """The health service's answer for `service`: "SERVING", "NOT_SERVING", ...

        Raises `Unimplemented` without a health service, and the hierarchy's
        error for NOT_FOUND (an unknown service name).
        """
        reply = self._call(
            "Check",
            lambda: self._health.Check(
                health_pb2.HealthCheckRequest(service=service), timeout=self.deadlines.control
            ),
        )
        name: str = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        return name

    def _reflect(
        self, request: reflection_pb2.ServerReflectionRequest, version: str
    ) -> reflection_pb2.ServerReflectionResponse:
        # v1 and v1alpha share their messages field for field; only the service name differs.
        info = self._channel.stream_stream(
            f"/{REFLECTION_SERVICES[version]}/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )

        def ask() -> reflection_pb2.ServerReflectionResponse:
            for reply in info(iter([request]), timeout=self.deadlines.control):
                if reply.HasField("error_response"):
                    raise errors.InvalidArgument(
                        f"reflection error {reply.error_response.error_code}: "
                        f"{reply.error_response.error_message}",
                        rpc="ServerReflectionInfo",
                    )
                return reply
            raise errors.Unavailable("reflection sent no answer", rpc="ServerReflectionInfo")

        return self._call("ServerReflectionInfo", ask)

    def reflection_versions(self) -> list[str]:
        """Which of "v1" and "v1alpha" server reflection answers; [] without reflection."""
        served = []
        for version in REFLECTION_SERVICES:
            try:
                self._reflect(reflection_pb2.ServerReflectionRequest(list_services=""), version)
            except errors.Unimplemented:
                continue
            served.append(version)
        return served

    def list_services(self, version: str = "v1alpha") -> list[str]:
        """Service names that server reflection lists; `Unimplemented` without reflection."""
        reply = self._reflect(reflection_pb2.ServerReflectionRequest(list_services=""), version)
        return sorted(s.name for s in reply.list_services_response.service)

    def reflected_methods(self, service: str, version: str = "v1alpha") -> dict[str, MethodShape]:
        """The methods of `service` as the server's own descriptors (via reflection) declare."""
        reply = self._reflect(
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=service), version
        )
        package, _, name = service.rpartition(".")
        for blob in reply.file_descriptor_response.file_descriptor_proto:
            proto = descriptor_pb2.FileDescriptorProto.FromString(blob)
            if proto.package != package:
                continue
            for svc in proto.service:
                if svc.name == name:
                    return {
                        m.name: MethodShape(
                            m.input_type.lstrip("."),
                            m.output_type.lstrip("."),
                            m.client_streaming,
                            m.server_streaming,
                        )
                        for m in svc.method
                    }
        return {}


def protocol_methods() -> dict[str, MethodShape]:
    """The methods of apmbench.v1.MemorySystem as this harness was built with them."""
    service = pb.DESCRIPTOR.services_by_name["MemorySystem"]
    return {
        m.name: MethodShape(
            m.input_type.full_name,
            m.output_type.full_name,
            m.client_streaming,
            m.server_streaming,
        )
        for m in service.methods
    }


MEMORY_SYSTEM_SERVICE: str = pb.DESCRIPTOR.services_by_name["MemorySystem"].full_name
HEALTH_SERVICE = "grpc.health.v1.Health"
MALFORMED_ITEMS = (
    "turn-without-kind",
    "turn-of-unknown-kind",
    "frame-without-encoding",
    "empty-item",
)
UNKNOWN_ENUM_VALUE = 9
"""An enum value no version of the protocol has (proto3 enums carry any number)."""
"""The stream items `SystemClient.push_malformed` can send, each breaking rule R10."""
REFLECTION_SERVICES = {
    "v1": "grpc.reflection.v1.ServerReflection",
    "v1alpha": "grpc.reflection.v1alpha.ServerReflection",
}
"""Server reflection's two names, newest first: a server may serve either or both."""
