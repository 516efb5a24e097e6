"""Take the frozen copy of /proc's host-wide counters (the rule procview.py applies).

Run by procview.py as `python -I -S procsnap.py ROOT`, once per harness process, before it
starts any system: it drops every capability first, so that it reads each file as a
sandboxed system would (the same uid, no capability: what a box cannot read it cannot
either, and what depends on the reader, such as the kernel addresses in vmallocinfo, is
what a box would see), then writes what it read under ROOT at the same relative path
(ROOT/proc/meminfo ...) and prints a JSON summary on stdout. Only the standard library: it
runs isolated from the harness's packages.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import stat
import struct
import sys
from pathlib import Path

PROC = Path("/proc")

KEPT_LIVE = (
    "cmdline", "config.gz", "consoles", "devices", "dma", "execdomains", "filesystems",
    "iomem", "ioports", "kallsyms", "misc", "mtrr", "partitions", "version",
)  # fmt: skip
"""Regular files directly under /proc that stay live: they change only when root loads a
module or adds hardware, nothing a process in a box can do. (crypto and modules are frozen:
binding an AF_ALG socket to an algorithm can load its module.) Each cover costs a mount in
every start, so the static ones are not covered."""
FROZEN_DIRS = ("pressure", "sys/fs")
"""Directories covered by a frozen copy of the whole directory: pressure stall times, and
/proc/sys/fs, whose counters (file-nr: open files; inode-nr, inode-state, dentry-state,
dentry-negative: cached inodes and dentries, which every file a box creates moves; aio-nr;
quota/*, where `syncs` counts every sync(2)) lie among settings a box cannot change. One
cover costs a mount in every start, so a directory of counters is covered as one."""
FROZEN_SYS = (
    "sys/kernel/hung_task_detect_count",
    "sys/kernel/pty/nr",
    "sys/kernel/random/entropy_avail",
)
"""The counters among /proc/sys/kernel's settings (pseudo-terminals, hung tasks), covered
one by one: the rest of that directory is per box (hostname, ns_last_pid) or must stay
live (random/uuid is a new one at every read)."""
EMPTIED = ("fs", "irq", "kpagecgroup", "kpagecount", "kpageflags", "tty/driver")
"""Covered by an empty directory or file: per-file-system statistics (ext4's free blocks
per group, jbd2's transactions, xfs's counters), per-interrupt counts, serial line
counters, and the physical page tables (every page's flags, map count and memory cgroup,
host-wide: a box whose uid maps to root reads them; tens of MB, never copied)."""
MAX_BYTES = 4 << 20
"""A covered file larger than this is emptied instead of copied (none is, on the kernels
seen: vmallocinfo, the largest, is about 100 kB)."""

_CAP_VERSION_3 = 0x20080522


def drop_capabilities() -> None:
    """Effective, permitted and inheritable sets emptied: file permission checks and the
    capability checks /proc files make at open (CAP_SYSLOG, CAP_SYS_ADMIN) then answer as
    they do a sandboxed system. Raises OSError when the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    header = ctypes.create_string_buffer(struct.pack("Ii", _CAP_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)
    if libc.capset(header, data) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"capset: {os.strerror(code)}")
    for line in (PROC / "self" / "status").read_text().splitlines():
        if line.startswith("CapEff:") and int(line.split()[1], 16) != 0:
            raise OSError(f"capabilities left after capset: {line}")


def covered(proc: Path = PROC) -> tuple[list[str], list[str]]:
    """The rule, applied to this kernel's /proc: (files to freeze, paths to empty),
    as paths relative to /proc, where they exist. Frozen: every regular file directly under
    /proc but KEPT_LIVE and EMPTIED (the per-process entries are directories and links),
    FROZEN_DIRS and FROZEN_SYS; emptied: EMPTIED."""
    files = []
    for entry in sorted(os.scandir(proc), key=lambda e: e.name):
        if entry.name in KEPT_LIVE or entry.name in EMPTIED:
            continue
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode):
            files.append(entry.name)
    files += [d for d in FROZEN_DIRS if (proc / d).is_dir()]
    files += [f for f in FROZEN_SYS if (proc / f).is_file()]
    # An emptied file the reader cannot open needs no cover (the page tables, unless the
    # harness is root); a directory can always be listed.
    emptied = [d for d in EMPTIED if (proc / d).is_dir() or _opens(proc / d)]
    return files, emptied


def _opens(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError:
        return False
    return True


class TooLarge(Exception):
    pass


def _read(path: Path) -> bytes | None:
    # In pieces: a sysctl refuses one read larger than the kernel can allocate (ENOMEM).
    data = b""
    try:
        with open(path, "rb", buffering=0) as f:
            while len(data) <= MAX_BYTES:
                piece = f.read(1 << 16)
                if not piece:
                    return data
                data += piece
    except OSError:
        return None
    raise TooLarge(path)


def _copy(source: Path, target: Path) -> bool:
    """A file copied (False when the reader cannot read it), or a directory's tree, without
    the files the reader cannot read (binfmt_misc's `register` is write-only)."""
    if source.is_dir():
        target.mkdir(parents=True)
        for entry in sorted(os.scandir(source), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
                _copy(Path(entry.path), target / entry.name)
        return True
    data = _read(source)
    if data is None:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(
        target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, (source.stat().st_mode & 0o444) or 0o400
    )
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return True


def take(root: Path, proc: Path = PROC) -> dict[str, list[str]]:
    """Write the frozen copies under `root`; what was frozen, emptied, and what the rule
    covers that this reader cannot read (a sandboxed system cannot either; a container
    running as another user might, so containers mask those)."""
    files, emptied = covered(proc)
    frozen: list[str] = []
    unreadable: list[str] = []
    for name in files:
        try:
            copied = _copy(proc / name, root / "proc" / name)
        except TooLarge:
            shutil.rmtree(root / "proc" / name, ignore_errors=True)  # a directory's part
            emptied.append(name)
            continue
        (frozen if copied else unreadable).append(name)
    for name in emptied:
        target = root / "proc" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (proc / name).is_dir():
            target.mkdir(mode=0o555)
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))
    return {"frozen": frozen, "emptied": emptied, "unreadable": unreadable}


def main(argv: list[str]) -> int:
    root = Path(argv[1])
    drop_capabilities()
    print(json.dumps(take(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
