"""In-process servers for RPC-level tests, over a Unix socket or TCP on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.servers import Serve

from apmbench.adapters.sdk import MemorySystem, RunningServer, start_server
from apmbench.harness.protocol.client import SystemClient


@pytest.fixture(params=["unix", "tcp"])
def serve(request: pytest.FixtureRequest, sock_dir: Path) -> Iterator[Serve]:
    """Start a system in this process and return a connected client."""
    started: list[tuple[RunningServer, SystemClient]] = []

    def start(system: MemorySystem) -> SystemClient:
        address = f"unix:{sock_dir}/s{len(started)}" if request.param == "unix" else "127.0.0.1:0"
        running = start_server(system, address)
        client = SystemClient(running.address)
        client.wait_serving(10)
        started.append((running, client))
        return client

    yield start
    for running, client in started:
        client.close()
        running.stop(grace=None)
