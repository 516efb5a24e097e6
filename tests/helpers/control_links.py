"""Links planted in the control directory (red team 16).

The snapshot runtime wrote `address` and `go` into a start's control directory just
after `runsc restore` returned, as root, following links; a thread the system started at
import runs on in every restore, so it could plant `address` as a link to any host path
first, and the harness created or overwrote that path (53 of 100 restores won the race:
a checkpoint image overwritten, the harness crashed, root-owned files left, a start
counter across restores). `PlantsAddress` tries at the first moment of every restore to
make `address` and `go` links to `/tmp/apm-cheat-<tag>-<name>` and prints what it got
(`planted: N`); `LinksSocket` makes `sock` a link to a host socket before its server
listens, so that the harness would dial that socket.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from apmbench.adapters.sdk import ExportedState

from .quiet import QuietSystem

CONTROL = "/run/apmbench"
TAG = os.environ.get("APMBENCH_CHEAT_TAG", "none")
PLANTED: list[int] = []


def target(name: str) -> str:
    return f"/tmp/apm-cheat-{TAG}-{name}"


def _plant() -> None:
    """From the loading start into every restore: wait for the loaded point, then for the
    restore (a fresh control directory, no `loaded` in it), then plant at once."""
    while not os.path.exists(f"{CONTROL}/loaded"):
        time.sleep(0.001)
    while os.path.exists(f"{CONTROL}/loaded"):
        time.sleep(0.0002)
    got = 0
    for name in ("address", "go"):
        try:
            os.symlink(target(name), f"{CONTROL}/{name}")
            got += 1
        except OSError:
            pass
    PLANTED.append(got)


class PlantsAddress(QuietSystem):
    name = "plants-address"

    def __init__(self) -> None:
        threading.Thread(target=_plant, daemon=True).start()

    def export_state(self) -> ExportedState:
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        print(f"planted: {PLANTED[-1] if PLANTED else -1}", flush=True)


class LinksSocket(QuietSystem):
    """A link where the server's socket belongs: its entry point's `serve` (looked up when
    called) is replaced by one that makes `sock` a link to a host socket and never
    listens, so the harness finds the link, deterministically, and must refuse it."""

    name = "links-socket"

    def __init__(self) -> None:
        main = sys.modules["__main__"]

        def link_instead(*args: object, **kwargs: object) -> None:
            os.symlink("/var/run/docker.sock", f"{CONTROL}/sock")
            time.sleep(3600)

        main.serve = link_instead  # type: ignore[attr-defined]

    def export_state(self) -> ExportedState:
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        pass
