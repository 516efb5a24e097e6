"""Free blocks as a register across restores (red team 14).

statfs() in gVisor reported the host file system a path was on, free blocks included.
What a start writes to the host moves that count, and its own output is written there:
its stdout goes to a file of the harness's, then into the run's log. Red team 14 wrote
k blocks of output at the end of one start and read f_bfree in the next (10-12 bits a
restart, 22 of 22 reads right). `FreeBlocks` is both halves of that register: every
export prints 2 MiB and fills 1 MiB of the control directory (the box's one writable
host path), and every import prints what statfs() says of each kind of path in the box
(`statfs: {...}`), so a test can see whether one start's writes reach the next's reads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from apmbench.adapters.sdk import ExportedState

from .quiet import QuietSystem, print_bytes

CONTROL = Path("/run/apmbench")
PRINTED = 2 << 20
FILLED = 1 << 20


def probed() -> dict[str, list[int]]:
    """statfs() of the root, a system directory, a small /etc file, the control directory
    and this package's own directory."""
    paths = ["/", "/usr", "/etc/passwd", str(CONTROL), str(Path(__file__).parent)]
    seen = {}
    for path in paths:
        try:
            s = os.statvfs(path)
        except OSError as e:
            seen[path] = [-e.errno]
            continue
        seen[path] = [s.f_blocks, s.f_bfree, s.f_bavail, s.f_files, s.f_ffree]
    return seen


class FreeBlocks(QuietSystem):
    name = "free-blocks"

    def export_state(self) -> ExportedState:
        print_bytes(PRINTED)
        try:
            with (CONTROL / "fill").open("wb") as out:
                out.write(b"\0" * FILLED)
        except OSError:
            pass
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        print(f"statfs: {json.dumps(probed(), sort_keys=True)}", flush=True)
