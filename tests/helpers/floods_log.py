"""A start that prints far more than its log may keep (red team 16).

The snapshot runtime let a start's output grow a host file without bound while the start
ran and read all of it back into memory when it ended (1 GiB a start took the harness
to 1.2 GB of memory). `FloodsLog` prints 64 MiB at each export; the runtime copies the
output through a pipe into the start's log section, which keeps `--max-log-size` of it.
"""

from __future__ import annotations

from apmbench.adapters.sdk import ExportedState

from .quiet import QuietSystem, print_bytes

PRINTED = 64 << 20


class FloodsLog(QuietSystem):
    name = "floods-log"

    def export_state(self) -> ExportedState:
        print_bytes(PRINTED, 65536)
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        pass
