"""A start that leaves a directory tree too deep for shutil.rmtree (red team 15).

The snapshot runtime removed each start's control directory with shutil.rmtree, which
recurses once a level: a chain of 1,200 directories raised RecursionError, which
`ignore_errors` does not cover, so the run died at its first restart and left the box's
tmpfs mounted on the host. `DeepTree` makes such a chain in the control directory at
every export.
"""

from __future__ import annotations

import os

from apmbench.adapters.sdk import ExportedState

from .quiet import QuietSystem

DEPTH = 1500


class DeepTree(QuietSystem):
    name = "deep-tree"

    def export_state(self) -> ExportedState:
        fd = os.open("/run/apmbench", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(DEPTH):
                os.mkdir("d", dir_fd=fd)
                below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = below
        except OSError:
            pass
        finally:
            os.close(fd)
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        pass
