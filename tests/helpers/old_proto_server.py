"""A server built from a previous release's wire description, not from this tree's SDK.

    python old_proto_server.py GENERATED_DIR ADDRESS [PROTOCOL_VERSION]

GENERATED_DIR holds `apmbench/v1/memory_system_pb2*.py` compiled from a
fixture .proto (tests/fixtures/proto/vX.Y); this process imports those and
never this checkout's `apmbench` packages, so what the harness talks to is
exactly the old wire. A minimal servicer: it remembers the user's turns,
answers "A", and exports and imports that memory.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

generated = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(generated))
from apmbench.v1 import memory_system_pb2 as pb  # noqa: E402
from apmbench.v1 import memory_system_pb2_grpc as pb_grpc  # noqa: E402

if not Path(pb.__file__).resolve().is_relative_to(generated):
    raise SystemExit(f"imported {pb.__file__}, not the old wire's code in {generated}")

STATE_TYPE = "application/x-old-proto+json"


class OldServer(pb_grpc.MemorySystemServicer):
    def __init__(self, protocol_version: str) -> None:
        self.protocol_version = protocol_version
        self.turns: list[str] = []
        self.frames = 0

    def Describe(self, request: Any, context: Any) -> Any:
        return pb.SystemInfo(
            name="old-proto",
            version="1.0.0",
            protocol_version=self.protocol_version,
            capabilities=pb.Capabilities(
                frame_encodings=[pb.FRAME_ENCODING_JPEG, pb.FRAME_ENCODING_RGB24],
                preferred_max_side=448,
                supports_import=True,
                streaming_ingest=True,
            ),
        )

    def Reset(self, request: Any, context: Any) -> Any:
        self.turns, self.frames = [], 0
        return pb.ResetResponse()

    def StartSession(self, request: Any, context: Any) -> Any:
        return pb.StartSessionResponse()

    def PushFrames(self, request_iterator: Iterator[Any], context: Any) -> Any:
        frames = turns = 0
        for item in request_iterator:
            if item.WhichOneof("item") == "frame":
                frames += 1
            else:
                self.turns.append(item.user_turn.text)
                turns += 1
        self.frames += frames
        return pb.PushFramesResponse(frames_ingested=frames, user_turns_ingested=turns)

    def EndSession(self, request: Any, context: Any) -> Any:
        return pb.EndSessionResponse()

    def Query(self, request: Any, context: Any) -> Iterator[Any]:
        yield pb.QueryChunk(text='{"answer": ')
        yield pb.QueryChunk(text='"A"}')

    def _state(self) -> bytes:
        return json.dumps({"turns": self.turns, "frames": self.frames}, sort_keys=True).encode()

    def ExportState(self, request: Any, context: Any) -> Iterator[Any]:
        data = self._state()
        manifest = pb.StateManifest(
            total_bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            content_type=STATE_TYPE,
            format_version=1,
        )
        yield pb.StateChunk(manifest=manifest)
        yield pb.StateChunk(data=data)

    def ImportState(self, request_iterator: Iterator[Any], context: Any) -> Any:
        chunks = list(request_iterator)
        data = b"".join(c.data for c in chunks[1:])
        memory = json.loads(data)
        self.turns, self.frames = list(memory["turns"]), int(memory["frames"])
        return pb.ImportStateResponse(bytes_imported=len(data))


def main() -> None:
    address = sys.argv[2]
    version = sys.argv[3] if len(sys.argv) > 3 else "1.0"
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_MemorySystemServicer_to_server(OldServer(version), server)
    checker = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    server.add_insecure_port(address)
    server.start()
    for name in ("", "apmbench.v1.MemorySystem"):
        checker.set(name, health_pb2.HealthCheckResponse.SERVING)
    print(f"serving old wire at {address}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop(0.5).wait()


if __name__ == "__main__":
    main()
