"""The thread body that copies a started server's output from its pipe into its log section.

A process start (fresh or forked from the template) writes into a pipe the harness reads, not
straight into the log file, so that its output is bounded by its `LogSection` (logcap.py);
the pump keeps reading past the bound, so a flooding system never blocks on a full pipe, and
it ends when the pipe does.
"""

from __future__ import annotations

import contextlib
from typing import IO

from apmbench.harness.runtimes.logcap import LogSection


def pump_log(stream: IO[bytes], section: LogSection) -> None:
    """Copy `stream` into `section` until end of file, then close it."""
    with contextlib.suppress(OSError, ValueError):
        while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
            section.write(chunk)
    with contextlib.suppress(OSError):
        stream.close()
