"""Each misuse is answered by the SDK itself with the status code the .proto documents."""

from __future__ import annotations

import io

import grpc
import pytest
from helpers.servers import Serve
from helpers.systems import Crashing, JsonMemory, NoImport, SlowStream

from apmbench.adapters.sdk import (
    DataLoss,
    FailedPrecondition,
    Frame,
    FrameEncoding,
    InvalidArgument,
    MethodFailure,
    ProtocolError,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    Unimplemented,
    UserTurn,
    UserTurnKind,
)
from apmbench.adapters.sdk.errors import DeadlineExceeded
from apmbench.adapters.sdk.types import StateManifest
from apmbench.adapters.systems.null import NullSystem
from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.v1 import memory_system_pb2 as pb
from apmbench.v1 import memory_system_pb2_grpc as pb_grpc

JPEG = b"\xff\xd8 not really a jpeg \xff\xd9"


def frame(t: int, encoding: FrameEncoding = FrameEncoding.JPEG, data: bytes = JPEG) -> Frame:
    return Frame(t, encoding, 2, 2, data)


def query(t: int) -> Query:
    return Query("q", t, QueryKind.MULTIPLE_CHOICE, "s", "p")


def expect(error: type[ProtocolError], text: str, call: object) -> ProtocolError:
    assert callable(call)
    with pytest.raises(error) as info:
        call()
    assert text in str(info.value), str(info.value)
    return info.value


def in_session(client: SystemClient, t: int = 1000) -> None:
    client.reset("T")
    client.start_session(SessionStart("T", "S1", "DAY1", t))


def test_push_outside_a_session(serve: Serve) -> None:
    client = serve(NullSystem())
    expect(FailedPrecondition, "PushFrames outside a session", lambda: client.push([frame(0)]))


def test_query_before_any_session(serve: Serve) -> None:
    client = serve(NullSystem())
    expect(FailedPrecondition, "Query outside a session", lambda: client.query(query(0)))


def test_end_without_session_and_double_start(serve: Serve) -> None:
    client = serve(NullSystem())
    expect(FailedPrecondition, "EndSession outside", lambda: client.end_session(SessionEnd("S", 0)))
    in_session(client)
    expect(
        FailedPrecondition,
        "while session 'S1' is open",
        lambda: client.start_session(SessionStart("T", "S2", "DAY1", 2000)),
    )
    expect(InvalidArgument, "does not match", lambda: client.end_session(SessionEnd("S9", 2000)))


def test_time_going_backwards(serve: Serve) -> None:
    client = serve(JsonMemory())
    in_session(client)
    err = expect(
        InvalidArgument,
        "earlier than the previous item",
        lambda: client.push([frame(1000), frame(3000), frame(2000), frame(4000)]),
    )
    assert err.rpc == "PushFrames"
    sink = io.BytesIO()
    client.export_state(sink)
    # Items before the offending one were ingested, none after it.
    assert b'"frames": 2' in sink.getvalue()
    expect(InvalidArgument, "earlier than the previous", lambda: client.query(query(2500)))
    client.end_session(SessionEnd("S1", 5000))
    expect(
        InvalidArgument,
        "StartSession at time_ms=4000",
        lambda: client.start_session(SessionStart("T", "S2", "DAY1", 4000)),
    )


def test_turns_obey_time_order_too(serve: Serve) -> None:
    client = serve(JsonMemory())
    in_session(client)
    expect(
        InvalidArgument,
        "user turn at time_ms=1500",
        lambda: client.push([frame(2000), UserTurn(1500, UserTurnKind.REGISTRATION, "x")]),
    )


def test_undeclared_or_malformed_frames(serve: Serve) -> None:
    client = serve(JsonMemory())  # declares JPEG only
    in_session(client)
    expect(
        InvalidArgument,
        "accepts only: jpeg",
        lambda: client.push([frame(1000, FrameEncoding.RGB24, bytes(12))]),
    )
    null = serve(NullSystem())
    in_session(null)
    expect(
        InvalidArgument,
        "expected 2x2x3 = 12",
        lambda: null.push([frame(1000, FrameEncoding.RGB24, bytes(11))]),
    )
    expect(InvalidArgument, "has no data", lambda: null.push([frame(1000, data=b"")]))


def test_import_when_not_declared(serve: Serve) -> None:
    client = serve(NoImport())
    manifest = StateManifest(2, "0" * 64, "application/json", 1)
    expect(
        Unimplemented,
        "supports_import = false",
        lambda: client.import_state(manifest, io.BytesIO(b"{}")),
    )


def test_import_inside_a_session(serve: Serve) -> None:
    client = serve(JsonMemory())
    in_session(client)
    manifest = StateManifest(2, "0" * 64, "application/json", 1)
    expect(
        FailedPrecondition,
        "ImportState while session",
        lambda: client.import_state(manifest, io.BytesIO(b"{}")),
    )


def test_import_that_does_not_match_its_manifest(serve: Serve) -> None:
    client = serve(JsonMemory())
    import hashlib

    data = b'{"frames": 0, "sessions": [], "turns": []}'
    good = hashlib.sha256(data).hexdigest()
    expect(
        DataLoss,
        "announced 999 bytes",
        lambda: client.import_state(
            StateManifest(999, good, "application/json", 1), io.BytesIO(data)
        ),
    )
    expect(
        DataLoss,
        "sha256 mismatch",
        lambda: client.import_state(
            StateManifest(len(data), "1" * 64, "application/json", 1), io.BytesIO(data)
        ),
    )
    assert client.import_state(
        StateManifest(len(data), good, "application/json", 1), io.BytesIO(data)
    ) == len(data)


def test_import_stream_without_manifest(serve: Serve) -> None:
    client = serve(JsonMemory())
    stub = pb_grpc.MemorySystemStub(grpc.insecure_channel(client.address))
    with pytest.raises(grpc.RpcError) as info:
        stub.ImportState(iter([pb.StateChunk(data=b"{}")]), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "must carry the manifest" in (info.value.details() or "")


def test_method_crash_is_internal_and_server_survives(serve: Serve) -> None:
    client = serve(Crashing())
    in_session(client)
    expect(MethodFailure, "ZeroDivisionError: boom", lambda: client.push([frame(1000)]))
    assert client.query(query(2000)).text  # still serving


def test_cancelled_query_does_not_wedge_the_server(serve: Serve) -> None:
    system = SlowStream()
    client = serve(system)
    in_session(client)
    impatient = SystemClient(client.address, Deadlines(query=0.3))
    expect(DeadlineExceeded, "DEADLINE_EXCEEDED", lambda: impatient.query(query(1000)))
    assert system.closed.wait(5), "the abandoned answer was never closed"
    # A wedged server would never answer: the push's own deadline says so (an event; a
    # wall-clock bound on the push failed on a loaded machine).
    patient = SystemClient(client.address, Deadlines(push=60.0))
    fast = patient.push([frame(2000)])
    assert fast.frames == 1
    patient.close()
    assert system.finished == 0
    impatient.close()
