"""Temp directories named after the harness process that made them.

A harness killed with SIGKILL cannot remove what it made. Its temp directories
(a system's socket directory, a container's bounded socket directory) are
therefore named `<prefix><pid>-<start time>-<random>`, so that the next harness
can tell which ones belong to a process that no longer runs and remove them.
The pid alone is not enough (pids are reused; pid_max is often 32768); the pair
of pid and start time is.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import psutil


def started_cs(pid: int) -> int | None:
    """When process `pid` started, in centiseconds since the epoch; None if it is gone."""
    try:
        return round(psutil.Process(pid).create_time() * 100)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def name_prefix(prefix: str) -> str:
    """The `tempfile.mkdtemp` prefix naming this process: `<prefix><pid>-<start>-`."""
    return f"{prefix}{os.getpid()}-{started_cs(os.getpid())}-"


def dead_owner_dirs(base: Path, prefix: str) -> list[tuple[Path, os.stat_result]]:
    """Real directories (never a link) directly in `base`, named by `name_prefix(prefix)`
    of a process that no longer runs, with what `lstat` found. Each caller decides what
    else proves a directory is its to remove (owner, mount source), and removes it its
    own way."""
    pattern = re.compile(rf"{re.escape(prefix)}(\d+)-(\d+)-[A-Za-z0-9_]+")
    dead = []
    for entry in base.glob(f"{prefix}*-*"):
        found = pattern.fullmatch(entry.name)
        if found is None:
            continue
        started = started_cs(int(found.group(1)))
        if started is not None and abs(started - int(found.group(2))) <= 1:
            continue
        try:
            info = os.lstat(entry)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            dead.append((entry, info))
    return dead
