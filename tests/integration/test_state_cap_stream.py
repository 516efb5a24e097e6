"""A server whose state manifest lies about its size is stopped at the cap, mid-stream.

The SDK declares the true size, so the cap usually refuses at the manifest; a
server below the SDK can declare 10 bytes and send a gigabyte. The client
must stop reading at the cap and must not write past it.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from helpers.broken_servers import serve_raw

from apmbench.adapters.sdk import errors
from apmbench.harness.protocol.client import ByteLimit, SystemClient
from apmbench.v1 import memory_system_pb2 as pb
from apmbench.v1 import memory_system_pb2_grpc as pb_grpc

CHUNK = 64 << 10


class LyingExport(pb_grpc.MemorySystemServicer):
    """Declares a 10-byte state, then streams without end."""

    def __init__(self) -> None:
        self.sent = 0

    def ExportState(
        self, request: pb.ExportStateRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StateChunk]:
        manifest = pb.StateManifest(
            total_bytes=10,
            sha256=hashlib.sha256(b"").hexdigest(),
            content_type="application/octet-stream",
        )
        yield pb.StateChunk(manifest=manifest)
        while context.is_active() and self.sent < (1 << 30):
            self.sent += CHUNK
            yield pb.StateChunk(data=b"s" * CHUNK)


def test_an_export_past_the_cap_is_cut_off_mid_stream(sock_dir: Path) -> None:
    servicer = LyingExport()
    running = serve_raw(servicer, f"unix:{sock_dir}/lying")
    try:
        with SystemClient(running.address) as client:
            client.wait_serving(10)
            sink = io.BytesIO()
            limit = ByteLimit(256 << 10, "--max-state-size")
            with pytest.raises(errors.ResourceExhausted, match="--max-state-size"):
                client.export_state(sink, limit=limit)
            assert len(sink.getvalue()) <= limit.bytes
            target = sock_dir / "state"
            with pytest.raises(errors.ResourceExhausted):
                client.export_to_file(target, limit=limit)
            assert not target.exists() and not list(sock_dir.glob("*.partial"))
    finally:
        running.stop(grace=None)
    assert servicer.sent < 64 << 20  # the server was not read to its end
