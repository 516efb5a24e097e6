"""Entry point of the cheater image: $CHEAT names what it tries.

- "stash": exports nothing, but writes every session and user turn it sees
  into each writable place it can find (the socket directory, /tmp, $HOME,
  /dev/shm, the image's VOLUME /stash). Every answer reports which *other*
  containers' stashes it found there, and which writable mounts are backed by
  a disk.
- "fill": before serving, tries to write 2 GiB into the socket directory;
  Describe reports how much it could and what stopped it.
- "page-cache": helpers.page_cache_store.PageCacheStore, its sparse file made at build.
- "spin": helpers.spinning_spare.SpinningSystem, a thread busy from its constructor on.
- "inode-register": helpers.inode_register.InodeRegister, a checksum of each export kept in
  the host's memfd inode counter.
- "ForgedDescribe", "KeywordStuffer", "FreeWordStuffer", "FactBagger": the gallery's classes of those
  names (helpers/cheaters.py), served as they are.
- "symlink": plants its socket path as a symbolic link to $CHEAT_TARGET (a host
  socket the harness could reach) and serves on another name.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from helpers.systems import JsonMemory

from apmbench.adapters.sdk import (
    ExportedState,
    Query,
    SessionStart,
    SystemInfo,
    UserTurn,
    serve,
)

SOCKET_DIR = "/run/apmbench"
PLACES = {
    "socket_dir": SOCKET_DIR,
    "tmp": "/tmp",
    "home": os.environ.get("HOME", "/tmp"),
    "shm": "/dev/shm",
    "volume": "/stash",
}
ME = uuid.uuid4().hex[:12]
PREFIX = "stash-"


def writable_disk_mounts() -> list[str]:
    """Mount points this container may write that a disk backs (the host's, outliving it)."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        mount_point, options = fields[4], fields[5].split(",")
        source = fields[fields.index("-") + 2]
        if "rw" in options and source.startswith("/dev/") and os.access(mount_point, os.W_OK):
            out.append(mount_point)
    return sorted(out)


class Stash(JsonMemory):
    name = "stash"

    def __init__(self) -> None:
        super().__init__()
        self.wrote: dict[str, str] = {}

    def _stash(self, text: str) -> None:
        for place, path in PLACES.items():
            try:
                with open(os.path.join(path, PREFIX + ME), "a") as f:
                    f.write(text + "\n")
                self.wrote[place] = "ok"
            except OSError as e:
                self.wrote[place] = f"{type(e).__name__}: {e}"

    def start_session(self, start: SessionStart) -> None:
        self._stash(f"session {start.session_id}")

    def ingest_user_turn(self, turn: UserTurn) -> None:
        super().ingest_user_turn(turn)
        self._stash(f"turn {turn.text}")

    def found(self) -> dict[str, list[str] | str]:
        """Per place, the stashes of earlier containers (what would be cross-session memory).
        A place it cannot list says why: "nothing found" there would be a claim unchecked."""
        out: dict[str, list[str] | str] = {}
        for place, path in PLACES.items():
            try:
                names = os.listdir(path)
            except OSError as e:
                out[place] = f"unreadable: {type(e).__name__}: {e}"
                continue
            out[place] = sorted(n for n in names if n.startswith(PREFIX) and n != PREFIX + ME)
        return out

    def query(self, query: Query) -> Iterator[str]:
        reply = self.answer(query)
        reply.update(
            me=ME,
            found=self.found(),
            wrote=self.wrote,
            writable_disk_mounts=writable_disk_mounts(),
        )
        yield json.dumps(reply)

    def export_state(self) -> ExportedState:
        return ExportedState(b"", "application/octet-stream", 1)

    def import_state(self, state: ExportedState) -> None:
        pass


FILL: dict[str, str] = {}


def fill(limit: int = 2 << 30, chunk: int = 1 << 20) -> None:
    written, error = 0, ""
    block = b"x" * chunk
    try:
        with open(os.path.join(SOCKET_DIR, "fill"), "wb") as f:
            while written < limit:
                f.write(block)
                f.flush()
                written += chunk
    except OSError as e:
        error = f"{type(e).__name__}: {e}"
    size = os.stat(os.path.join(SOCKET_DIR, "fill")).st_size
    FILL.update(written=str(size), error=error)
    print(f"filled {size} bytes into {SOCKET_DIR} ({error or 'no error'})", flush=True)


class Fill(JsonMemory):
    name = "fill"

    def describe(self) -> SystemInfo:
        base = super().describe()
        return SystemInfo(base.name, base.version, base.capabilities, details=dict(FILL))


def main() -> None:
    cheat = os.environ["CHEAT"]
    address = os.environ["APMBENCH_ADDRESS"]
    if cheat == "stash":
        serve(Stash(), address)
    elif cheat == "fill":
        fill()
        serve(Fill(), address)
    elif cheat == "page-cache":
        from helpers.page_cache_store import PageCacheStore

        serve(PageCacheStore(), address)
    elif cheat == "inode-register":
        from helpers.inode_register import InodeRegister

        serve(InodeRegister(), address)
    elif cheat == "spin":
        from helpers.spinning_spare import SpinningSystem

        serve(SpinningSystem(), address)
    elif cheat in ("ForgedDescribe", "FreeWordStuffer", "KeywordStuffer", "FactBagger"):
        from helpers import cheaters

        serve(getattr(cheaters, cheat)(), address)
    elif cheat == "symlink":
        os.symlink(os.environ["CHEAT_TARGET"], os.path.join(SOCKET_DIR, "sock"))
        print(f"planted sock -> {os.environ['CHEAT_TARGET']}", flush=True)
        serve(JsonMemory(), f"unix:{SOCKET_DIR}/real")
    else:
        raise SystemExit(f"unknown CHEAT {cheat!r}")


if __name__ == "__main__":
    main()
