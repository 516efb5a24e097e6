"""Every RPC against a real server, over a Unix socket and over TCP."""

from __future__ import annotations

import hashlib
import io
import json

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from helpers.servers import Serve
from helpers.systems import BigState, JsonMemory

from apmbench.adapters.sdk import (
    PROTOCOL_VERSION,
    Frame,
    FrameEncoding,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    UserTurn,
    UserTurnKind,
)
from apmbench.adapters.sdk.wire import DEFAULT_CHUNK_BYTES
from apmbench.adapters.systems.null import NullSystem
from apmbench.harness.protocol.client import SystemClient

JPEG = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffd9")


def frame(t: int) -> Frame:
    return Frame(t, FrameEncoding.JPEG, 4, 4, JPEG)


def mc_query(t: int) -> Query:
    return Query("q", t, QueryKind.MULTIPLE_CHOICE, "system", "prompt")


def test_describe_reports_version_and_capabilities(serve: Serve) -> None:
    info = serve(NullSystem()).describe()
    assert info.name == "null"
    assert info.protocol_version == PROTOCOL_VERSION
    assert FrameEncoding.JPEG in info.capabilities.frame_encodings
    assert info.capabilities.supports_import


def test_session_lifecycle_push_query_export(serve: Serve) -> None:
    client = serve(JsonMemory())
    client.reset("T1")
    client.start_session(SessionStart("T1", "S1", "DAY1", 1000))
    pushed = client.push(
        [frame(1000), UserTurn(1500, UserTurnKind.REGISTRATION, "remind me"), frame(2000)]
    )
    assert (pushed.frames, pushed.user_turns) == (2, 1)
    result = client.query(mc_query(2000))
    assert json.loads(result.text)["memory"]["turns"] == ["remind me"]
    assert result.ttft_s is not None and result.ttft_s <= result.total_s
    client.end_session(SessionEnd("S1", 3000))
    sink = io.BytesIO()
    exported = client.export_state(sink)
    assert json.loads(sink.getvalue()) == {"frames": 2, "sessions": ["S1"], "turns": ["remind me"]}
    assert exported.manifest.sha256 == hashlib.sha256(sink.getvalue()).hexdigest()
    assert exported.manifest.content_type == "application/json"


@pytest.mark.slow
def test_query_is_streamed_in_chunks(serve: Serve) -> None:
    from helpers.systems import SlowStream

    client = serve(SlowStream())
    client.start_session(SessionStart("T", "S", "DAY1", 0))
    result = client.query(mc_query(0))
    assert result.text == "." * 50 and result.chunks == 50
    assert result.ttft_s is not None and result.ttft_s < result.total_s / 2


def test_export_import_roundtrip_of_state_larger_than_64_mib(serve: Serve, tmp_path) -> None:  # type: ignore[no-untyped-def]
    size = 70 << 20
    source = serve(BigState(size))
    path = tmp_path / "state.bin"
    exported = source.export_to_file(path)
    assert exported.manifest.total_bytes == size == path.stat().st_size
    assert exported.manifest.format_version == 3
    target_system = BigState(16)
    target = serve(target_system)
    assert target.import_file(exported.manifest, path, max_chunk_bytes=512 << 10) == size
    again = target.export_to_file(tmp_path / "again.bin")
    assert again.manifest.sha256 == exported.manifest.sha256
    assert (tmp_path / "again.bin").read_bytes() == path.read_bytes()


def test_export_chunks_stay_below_the_message_limit(serve: Serve) -> None:
    client = serve(BigState(5 << 20 | 123))
    # Read the raw stream to see the chunk sizes the server chose.
    from apmbench.v1 import memory_system_pb2 as pb
    from apmbench.v1 import memory_system_pb2_grpc as pb_grpc

    stub = pb_grpc.MemorySystemStub(grpc.insecure_channel(client.address))
    chunks = list(stub.ExportState(pb.ExportStateRequest(max_chunk_bytes=0)))
    assert chunks[0].WhichOneof("chunk") == "manifest"
    sizes = [len(c.data) for c in chunks[1:]]
    assert max(sizes) == DEFAULT_CHUNK_BYTES and sum(sizes) == 5 << 20 | 123
    huge = list(stub.ExportState(pb.ExportStateRequest(max_chunk_bytes=64 << 20)))
    assert max(len(c.data) for c in huge[1:]) <= 2 << 20


def test_export_is_byte_identical_for_the_same_memory(serve: Serve) -> None:
    client = serve(JsonMemory())
    client.start_session(SessionStart("T", "S", "DAY1", 0))
    client.push([frame(0)])
    client.end_session(SessionEnd("S", 10))
    a, b = io.BytesIO(), io.BytesIO()
    client.export_state(a)
    client.export_state(b)
    assert a.getvalue() == b.getvalue()


def test_reset_forgets_everything(serve: Serve) -> None:
    client = serve(JsonMemory())
    client.start_session(SessionStart("T", "S", "DAY1", 0))
    client.push([frame(0), UserTurn(0, UserTurnKind.QUESTION, "q?")])
    client.reset("T2")
    sink = io.BytesIO()
    client.export_state(sink)
    assert json.loads(sink.getvalue()) == {"frames": 0, "sessions": [], "turns": []}
    # Reset also closes the session and restarts the clock.
    client.start_session(SessionStart("T2", "S", "DAY1", 0))


def test_health_serving_and_reflection(serve: Serve) -> None:
    client = serve(NullSystem())
    channel = grpc.insecure_channel(client.address)
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "apmbench.v1.MemorySystem"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    replies = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
    )
    names = {s.name for r in replies for s in r.list_services_response.service}
    assert {"apmbench.v1.MemorySystem", "grpc.health.v1.Health"} <= names
    channel.close()


def test_raw_rgb_frames_are_accepted_when_declared(serve: Serve) -> None:
    client = serve(NullSystem())
    client.start_session(SessionStart("T", "S", "DAY1", 0))
    rgb = Frame(0, FrameEncoding.RGB24, 2, 2, bytes(12))
    assert client.push([rgb]).frames == 1


def test_client_refuses_another_protocol_major(serve: Serve) -> None:
    from apmbench.adapters.sdk import FailedPrecondition, SystemInfo

    class Future(NullSystem):
        def describe(self) -> SystemInfo:
            info = super().describe()
            return SystemInfo(info.name, info.version, info.capabilities, protocol_version="2.0")

    client = serve(Future())
    try:
        client.describe()
    except FailedPrecondition as e:
        assert "speaks protocol 2.0" in str(e)
    else:
        raise AssertionError("a protocol 2.0 server was accepted")


def test_unreachable_server_is_reported(sock_dir) -> None:  # type: ignore[no-untyped-def]
    from apmbench.adapters.sdk.errors import Unavailable

    client = SystemClient(f"unix:{sock_dir}/nobody")
    try:
        client.wait_serving(0.5)
    except Unavailable as e:
        assert "did not report SERVING" in str(e)
    else:
        raise AssertionError("no error for a missing server")
