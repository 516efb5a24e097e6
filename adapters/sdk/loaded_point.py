"""The loaded point: where a server has loaded everything and holds no session data yet.

A harness that snapshots starts (`--start snapshot`: gVisor's checkpoint and restore) sets
`APMBENCH_LOADED_POINT` to a directory the server may write. A server that supports it
loads (imports, model, weights), writes `loaded` in that directory and waits, without
listening and without any socket on the host, until `go` appears there; it then listens
at the address `address` holds (or its `--address`). The harness checkpoints the process
while it waits and restores that one image for every start, so each start is the same
bytes. A server that ignores the variable still works: it gets a full start each time.
`serve_at_loaded_point` does it for a Python server (docs/PROTOCOL.md#the-loaded-point).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

LOADED_POINT_ENV = "APMBENCH_LOADED_POINT"
LOADED_FILE = "loaded"
GO_FILE = "go"
ADDRESS_FILE = "address"
POLL_S = 0.005


def wait_at_loaded_point(address: str) -> str:
    """Mark the loaded point when the harness asks for one and wait for `go`; the address
    to listen at (the harness's, else `address`). Without the variable: `address` at once."""
    where = os.environ.get(LOADED_POINT_ENV)
    if not where:
        return address
    control = Path(where)
    (control / LOADED_FILE).write_text(str(os.getpid()))
    # Polling, not a watch: inotify state would be part of the snapshot for nothing.
    while not (control / GO_FILE).exists():
        time.sleep(POLL_S)
    given = control / ADDRESS_FILE
    return given.read_text().strip() if given.exists() else address
