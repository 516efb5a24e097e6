"""A system that misbehaves in one chosen way, for the fault campaign (tests/helpers/campaign.py).

`$APMBENCH_FAULT` = `KIND[:RPC[:N[:ARG]]]` (passed with `--env`, so the
sandboxed process gets it), otherwise an honest JSON memory:

- crash:RPC:N       exits (code 3) at the Nth call of RPC in this process;
- hang:RPC:N        never answers the Nth call of RPC;
- markup:RPC:N      prints markup and terminal escapes, then fails the Nth call of RPC
                    with them in its error message;
- huge-state::N:B   the Nth export is B bytes (the honest state plus padding);
- flood::0:B        prints B bytes at every start, then behaves;
- symlink-socket    swaps its socket for a link to it as soon as it exists;
- oom:RPC:N         allocates memory without end at the Nth call of RPC (a container's
                    memory limit ends it);
- threads:RPC:N     starts threads without end at the Nth call of RPC (a container's pids
                    limit stops them), then fails the call.

RPC is a method name of `MemorySystem` (push = ingest_frame, export = export_state, ...).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from apmbench.adapters.sdk import (
    ExportedState,
    FailedPrecondition,
    Frame,
    Query,
    SessionEnd,
    SessionStart,
)
from helpers.systems import JsonMemory

HOSTILE = "[/bogus] [red]x[/red] \x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m\r\x9b2J"
"""Markup that would crash a Rich print, a title change, a screen clear, a colour, a CR."""


def _address() -> str | None:
    """Where this server listens: --address (a process), or $APMBENCH_ADDRESS (a container)."""
    argv = sys.argv
    if "--address" in argv:
        return argv[argv.index("--address") + 1]
    return os.environ.get("APMBENCH_ADDRESS")


class Faulty(JsonMemory):
    name = "faulty"

    def __init__(self) -> None:
        super().__init__()
        parts = os.environ.get("APMBENCH_FAULT", "none").split(":")
        parts += [""] * (4 - len(parts))
        self.kind, self.rpc = parts[0], parts[1]
        self.at = int(parts[2] or 1)
        self.arg = int(parts[3] or 0)
        self.calls: Counter[str] = Counter()
        self.exports = 0
        if self.kind == "flood":
            line = b"flood " + b"x" * 120 + b"\n"
            out = sys.stdout.buffer
            for _ in range(self.arg // len(line) + 1):
                out.write(line)
            out.flush()
        if self.kind == "markup":
            print(HOSTILE, flush=True)
        if self.kind == "symlink-socket":
            threading.Thread(target=self._swap_socket, daemon=True).start()

    def _swap_socket(self) -> None:
        address = _address()
        if address is None or not address.startswith("unix:"):
            return
        sock = Path(address.removeprefix("unix:"))
        for _ in range(20000):
            if sock.exists() and not sock.is_symlink():
                real = sock.with_name("sock.real")
                sock.rename(real)
                sock.symlink_to(real)
                return
            time.sleep(0.0005)

    def _hit(self, rpc: str) -> None:
        self.calls[rpc] += 1
        if rpc != self.rpc or self.calls[rpc] != self.at:
            return
        if self.kind == "crash":
            os._exit(3)
        if self.kind == "hang":
            while True:
                time.sleep(3600)
        if self.kind == "markup":
            raise FailedPrecondition(f"refused: {HOSTILE}")
        if self.kind == "oom":
            hoard = []
            while True:
                hoard.append(bytearray(16 << 20))
        if self.kind == "threads":
            started = 0
            stop = threading.Event()
            try:
                while started < 1_000_000:
                    threading.Thread(target=stop.wait, daemon=True).start()
                    started += 1
            except RuntimeError as e:
                raise FailedPrecondition(f"out of threads after {started}: {e}") from e

    def reset(self, trajectory_id: str) -> None:
        self._hit("reset")
        super().reset(trajectory_id)

    def start_session(self, start: SessionStart) -> None:
        self._hit("start_session")
        super().start_session(start)

    def ingest_frame(self, frame: Frame) -> None:
        self._hit("push")
        super().ingest_frame(frame)

    def end_session(self, end: SessionEnd) -> None:
        self._hit("end_session")
        super().end_session(end)

    def query(self, query: Query) -> Iterator[str]:
        self._hit("query")
        yield from super().query(query)

    def export_state(self) -> ExportedState:
        self._hit("export")
        self.exports += 1
        state = super().export_state()
        if self.kind == "huge-state" and self.exports >= self.at:
            padded = {"memory": json.loads(state.data), "padding": "p" * self.arg}
            return ExportedState(json.dumps(padded).encode(), "application/json", 1)
        return state

    def import_state(self, state: ExportedState) -> None:
        self._hit("import")
        data = json.loads(state.data)
        if "padding" in data:
            data = data["memory"]
        super().import_state(ExportedState(json.dumps(data).encode(), "application/json", 1))
