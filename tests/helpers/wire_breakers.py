"""Servers that break one wire rule of memory_system.proto each, below the SDK (which keeps them).

Each is the SDK's servicer with one reply altered, so it is otherwise a
correct server: a run against it must fail on that rule and nothing else.
Served in-process with `broken_servers.serve_raw`; tests only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import grpc

from apmbench.adapters.sdk import wire
from apmbench.adapters.sdk.server import MemorySystemServicer
from apmbench.adapters.sdk.types import StateManifest
from apmbench.v1 import memory_system_pb2 as pb
from helpers.broken_systems import Honest

# Past the 1 MiB default chunk, below gRPC's 4 MiB message limit: only R7 forbids it.
OVERSIZE_CHUNK = 3 << 19


class Padded(Honest):
    """An honest memory of at least 1.5 MiB, so that its state needs more than one chunk."""

    name = "padded"

    def empty(self) -> dict[str, Any]:
        return {**super().empty(), "pad": "x" * OVERSIZE_CHUNK}


class _Altered(MemorySystemServicer):
    """Exports the state as `chunks` lays it out; everything else as the SDK does."""

    def __init__(self) -> None:
        super().__init__(Padded())

    def ExportState(
        self, request: pb.ExportStateRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StateChunk]:
        first, *rest = super().ExportState(request, context)
        m = first.manifest
        manifest = StateManifest(m.total_bytes, m.sha256, m.content_type, m.format_version)
        yield from self.chunks(request, manifest, b"".join(c.data for c in rest))

    def chunks(
        self, request: pb.ExportStateRequest, manifest: StateManifest, data: bytes
    ) -> Iterator[pb.StateChunk]:
        size = wire.chunk_size(request.max_chunk_bytes)
        yield from wire.state_chunks(manifest, wire.split(data, size))


class OversizeChunks(_Altered):
    """Sends 1.5 MiB chunks whatever the client asked for (R7)."""

    def chunks(
        self, request: pb.ExportStateRequest, manifest: StateManifest, data: bytes
    ) -> Iterator[pb.StateChunk]:
        yield from wire.state_chunks(manifest, wire.split(data, OVERSIZE_CHUNK))


class ShortSha(_Altered):
    """Sends a manifest whose sha256 is cut to 63 hex digits."""

    def chunks(
        self, request: pb.ExportStateRequest, manifest: StateManifest, data: bytes
    ) -> Iterator[pb.StateChunk]:
        yield from super().chunks(request, replace(manifest, sha256=manifest.sha256[:63]), data)


class UpperSha(_Altered):
    """Sends the sha256 in capitals, where the .proto says lower-case hex."""

    def chunks(
        self, request: pb.ExportStateRequest, manifest: StateManifest, data: bytes
    ) -> Iterator[pb.StateChunk]:
        yield from super().chunks(request, replace(manifest, sha256=manifest.sha256.upper()), data)


class OverstatesSize(_Altered):
    """Announces one byte more than it sends."""

    def chunks(
        self, request: pb.ExportStateRequest, manifest: StateManifest, data: bytes
    ) -> Iterator[pb.StateChunk]:
        size = manifest.total_bytes + 1
        yield from super().chunks(request, replace(manifest, total_bytes=size), data)


class WrongDigest(_Altered):
    """Announces the sha256 of other bytes than it sends."""

    def chunks(
        self, request: pb.ExportStateRequest, manifest: StateManifest, data: bytes
    ) -> Iterator[pb.StateChunk]:
        other = hashlib.sha256(data + b"!").hexdigest()
        yield from super().chunks(request, replace(manifest, sha256=other), data)


class ManifestTwice(_Altered):
    """Repeats the manifest after the data: a chunk out of the allowed shape."""

    def chunks(
        self, request: pb.ExportStateRequest, manifest: StateManifest, data: bytes
    ) -> Iterator[pb.StateChunk]:
        stream = list(super().chunks(request, manifest, data))
        yield from [*stream, stream[0]]


class EmptyChunk(_Altered):
    """Ends the state with a chunk that carries neither manifest nor data."""

    def chunks(
        self, request: pb.ExportStateRequest, manifest: StateManifest, data: bytes
    ) -> Iterator[pb.StateChunk]:
        yield from super().chunks(request, manifest, data)
        yield pb.StateChunk()


class NotFoundQuery(MemorySystemServicer):
    """Answers every Query with NOT_FOUND, a status the .proto does not list for Query."""

    def __init__(self) -> None:
        super().__init__(Honest())

    def Query(self, request: pb.QueryRequest, context: grpc.ServicerContext) -> Iterator[Any]:
        context.abort(grpc.StatusCode.NOT_FOUND, "no such query")
        yield from ()


class DataLossExport(_Altered):
    """Answers ExportState with DATA_LOSS, which the .proto allows only for ImportState."""

    def ExportState(
        self, request: pb.ExportStateRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StateChunk]:
        context.abort(grpc.StatusCode.DATA_LOSS, "lost it")
        yield from ()
