"""Broken servers below the SDK: they break rules the SDK itself enforces (time order) or leave
out what its serve() adds (health, reflection), so the checks can be shown to catch them.

Built on the generated servicer base, as a method author who skips the SDK would; tests only.
"""

from __future__ import annotations

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
