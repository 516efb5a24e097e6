"""A sandboxed system's socket directory is bounded: the one place it may write that the
harness made is a small tmpfs inside its box, not the host's /tmp.

Both halves: with the bound off (the host directory bound read-write, as before), the
filler's 4 MiB land on the host disk; with it, the write stops at the bound with ENOSPC,
nothing reaches the host directory, and the server still serves on its socket."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.cheaters import FILL_BYTES

from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import ProcessRuntime, sandboxed_process
from apmbench.harness.runtimes.sandbox import SOCKET_DIR_BYTES, find_bwrap

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)


@pytest.fixture
def runtime(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ProcessRuntime]:
    """A fresh start, or one forked from the template (`--start template`), whose socket
    directory is a bounded tmpfs it mounts itself in its own /tmp."""
    rt = sandboxed_process(
        "helpers.cheaters:SocketDirFiller",
        tmp_path / "system.log",
        Deadlines(),
        120.0,
        sandbox=True,
        start=getattr(request, "param", "fresh"),
    )
    yield rt
    rt.stop()


def _filled(runtime: ProcessRuntime) -> dict[str, Any]:
    found = re.findall(r"^filler: (.*)$", runtime.log_path.read_text(), re.MULTILINE)
    assert found, runtime.log_path.read_text()
    got: dict[str, Any] = json.loads(found[-1])
    return got


def _host_bytes(directory: Path) -> int:
    return sum(os.lstat(p).st_size for p in directory.iterdir())


def test_without_the_bound_a_system_fills_the_hosts_tmp(runtime: ProcessRuntime) -> None:
    runtime.bound_socket_dir = False
    client = runtime.start()
    assert client.describe().name == "socket-dir-filler"
    host_dir = Path(runtime.address.removeprefix("unix:")).parent
    assert _filled(runtime) == {"written": FILL_BYTES, "error": "none"}
    assert _host_bytes(host_dir) == FILL_BYTES  # on the host disk, beside the socket


@pytest.mark.parametrize("runtime", ["fresh", "template"], indirect=True)
def test_the_bound_stops_the_write_and_the_socket_still_serves(runtime: ProcessRuntime) -> None:
    client = runtime.start()
    assert client.describe().name == "socket-dir-filler"  # the socket works
    client.reset("t")
    filled = _filled(runtime)
    assert filled["error"] == "ENOSPC"
    assert filled["written"] <= SOCKET_DIR_BYTES < FILL_BYTES
    host_dir = Path(runtime.address.removeprefix("unix:")).parent
    assert host_dir.is_dir() and list(host_dir.iterdir()) == []  # the host saw nothing
    assert runtime.client_address != runtime.address
    runtime.stop()
    assert not host_dir.exists()
