"""Where a command writes, checked when its options are parsed: before anything starts.

A `--out` that is a file, lies under /proc, /sys or /dev, or whose nearest existing
directory cannot be written to is refused with exit 2 and what to do (click's usage
error), nothing started and nothing written; the check used to happen when the run
directory was first created, after a system had begun to start, as a Python traceback.
A parent that does not exist yet is fine: the command creates it, as `mkdir -p` would.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

VIRTUAL = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Kernel filesystems: nothing a command writes belongs there."""


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path("/")


def problem(path: Path, directory: bool) -> str | None:
    """Why `path` cannot be written as a directory (`directory`) or a file; None when it can."""
    absolute = Path(os.path.abspath(path.expanduser()))
    resolved = absolute.resolve(strict=False)
    for root in VIRTUAL:
        if resolved == root or root in resolved.parents:
            return f"{path} is under {root}, a kernel filesystem: choose a directory on disk"
    if resolved.exists():
        if directory and not resolved.is_dir():
            return f"{path} is a file, not a directory: choose a directory (new or existing)"
        if not directory and resolved.is_dir():
            return f"{path} is a directory: give a file name"
    if not directory and resolved.is_file():
        # An existing file is written over (through a new file beside it, atomically).
        if not os.access(resolved.parent, os.W_OK | os.X_OK):
            return f"{resolved.parent} is not writable: choose a directory you can write to"
        return None
    existing = _nearest_existing(resolved)
    if not existing.is_dir():
        return f"{existing} is a file, so {path} cannot be created under it"
    target = resolved if resolved.is_dir() else existing
    if not os.access(target, os.W_OK | os.X_OK):
        return f"{target} is not writable: choose a directory you can write to"
    return None


class OutputPath(click.Path):
    """A click path option that must be writable as a directory (or a file); "-" passes
    through when `dash` (stdout)."""

    def __init__(self, directory: bool = True, dash: bool = False) -> None:
        super().__init__(path_type=Path, allow_dash=dash)
        self.directory = directory
        self.dash = dash

    def convert(
        self,
        value: str | os.PathLike[str],
        param: click.Parameter | None,
        ctx: click.Context | None,
    ) -> str | bytes | os.PathLike[str]:
        path = super().convert(value, param, ctx)
        if self.dash and str(path) == "-":
            return path
        found = problem(Path(os.fsdecode(path)), self.directory)
        if found is not None:
            self.fail(found, param, ctx)
        return path
