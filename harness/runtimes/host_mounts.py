"""No kernel pseudo-filesystem, and no whole host tmpfs, is ever bound into a box.

A host path a setting names is bound into the sandbox read-only and recursively (bwrap
binds with MS_REC): a model directory given as `APMBENCH_VLM_MODEL=/sys/fs/cgroup`
handed a red team the host's whole cgroup tree, other runs' cgroups and their memory
statistics included, through a bind nothing else checked. Whatever a file system of the
kernel's own shows (/proc, /sys, cgroups, device nodes, namespaces) is host state that
changes with other starts: a channel, never a model. So a bind is refused when the path
lies on such a file system, or when one is mounted at or below it; a tmpfs is refused when
the path would bind a whole one (its mount point at or below the path: /run, /dev/shm),
and allowed when the path is a directory inside one (a /tmp on tmpfs holding what the
user put there, common on current distributions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.errors import ConfigError

MOUNTINFO = Path("/proc/self/mountinfo")
PSEUDO = frozenset(
    {
        "proc", "sysfs", "cgroup", "cgroup2", "devtmpfs", "devpts", "mqueue", "debugfs",
        "tracefs", "securityfs", "bpf", "configfs", "pstore", "fusectl", "binfmt_misc",
        "efivarfs", "nsfs", "hugetlbfs", "autofs", "rpc_pipefs", "selinuxfs",
    }
)  # fmt: skip
"""Kernel file systems whose files are the host's live state, not files a user wrote."""
WHOLE_REFUSED = PSEUDO | {"tmpfs", "ramfs"}
"""Mounted at or below a bound path: refused (a host tmpfs holds other runs' sockets and
files; /run, /dev/shm)."""


@dataclass(frozen=True)
class Mount:
    point: Path
    fstype: str


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as three-digit octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts(text: str | None = None) -> list[Mount]:
    """The mounts of this process's mount namespace (proc(5)'s mountinfo format)."""
    table = MOUNTINFO.read_text() if text is None else text
    found = []
    for line in table.splitlines():
        fields = line.split(" ")
        if " - " not in line or len(fields) < 5:
            continue
        fstype = line.split(" - ", 1)[1].split(" ", 1)[0]
        found.append(Mount(Path(_unescape(fields[4])), fstype))
    return found


def offending(path: Path, table: Iterable[Mount]) -> Mount | None:
    """The mount that makes binding `path` (a resolved path) unsafe, or None."""
    table = list(table)
    holding = [m for m in table if m.point == path or m.point in path.parents]
    if holding:
        on = max(holding, key=lambda m: len(m.point.parts))
        if on.fstype in PSEUDO:
            return on
    for m in table:
        if (m.point == path or path in m.point.parents) and m.fstype in WHOLE_REFUSED:
            return m
    return None


def refuse_pseudo_filesystems(binds: Mapping[Path, str], text: str | None = None) -> None:
    """Raise ConfigError (exit 2) for the first bind, by path, that would bring a kernel
    pseudo-filesystem or a whole host tmpfs into the box; `binds` maps each resolved host
    path to the setting that named it."""
    table = mounts(text)
    for path, setting in sorted(binds.items()):
        bad = offending(path, table)
        if bad is None:
            continue
        if bad.point == path:
            where = f"is a {bad.fstype} mount"
        elif bad.point in path.parents:
            where = f"lies on {bad.point} ({bad.fstype})"
        else:
            where = f"has {bad.point} ({bad.fstype}) mounted below it"
        raise ConfigError(
            f"{setting} names {path}, which {where}: a file system "
            "of the host's live state (or a whole host tmpfs) would be bound into the "
            "system's sandbox, where it is a channel between starts, never an input. Name "
            "a directory of ordinary files (copy what the system needs into one)"
        )
