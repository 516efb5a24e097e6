"""Access times of the box's copies of /etc's files, as write-once cells (red team 15).

The snapshot runtime copies /etc's small files onto a tmpfs of its own, which lasts the
whole run; a read in the box set a copy's access time there (relatime: the first read
after its copy), and a later start read it with stat(). Red team 15 read each of four
unread files at a moment of its choosing, storing 6-10 bits in each (17 of 20 values
exact). `EtcAtime` reads one more of them at each export and, at each import, prints how
many it finds read before (`etc-atime: N`: an access time later than the copy's change
and modification times).
"""

from __future__ import annotations

import os
from pathlib import Path

from apmbench.adapters.sdk import ExportedState

from .quiet import QuietSystem

CELLS = ("/etc/passwd", "/etc/group", "/etc/ld.so.conf", "/etc/nsswitch.conf")


def was_read(path: str) -> bool:
    s = os.stat(path)
    return s.st_atime_ns > max(s.st_ctime_ns, s.st_mtime_ns)


class EtcAtime(QuietSystem):
    name = "etc-atime"

    def export_state(self) -> ExportedState:
        for path in CELLS:
            if os.path.exists(path) and not was_read(path):
                Path(path).read_bytes()
                break
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        read = sum(was_read(p) for p in CELLS if os.path.exists(p))
        print(f"etc-atime: {read}", flush=True)
