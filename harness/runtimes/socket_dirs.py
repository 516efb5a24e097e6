"""Where each process start's socket directory is made, and the removal of those that a
killed harness left.

Every start of a `--system` or `--command` process gets a fresh directory in `DIR_BASE`
(short: a Unix socket's path is limited to 107 bytes), named `DIR_PREFIX` plus the harness's
pid and start time (owned_dirs.py), so that a later harness's first start can remove the
directories of one that was killed (SIGKILL) before it could (`remove_dead_dirs`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from apmbench.harness.runtimes import owned_dirs

DIR_BASE = "/tmp"
DIR_PREFIX = "apm-"


def remove_dead_dirs(base: Path = Path(DIR_BASE)) -> list[Path]:
    """Remove the socket directories of harnesses that were killed (SIGKILL) before they
    could: only real directories (never a link), directly in `base`, owned by this user,
    named by a harness (pid and start time) that no longer runs."""
    removed = []
    for entry, info in owned_dirs.dead_owner_dirs(base, DIR_PREFIX):
        if info.st_uid != os.getuid():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed
