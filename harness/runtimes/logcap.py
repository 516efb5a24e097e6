"""One start's section of a system's log: bounded, and closed before the next one opens.

A system can print without end; every start (process or container) therefore
writes into its own `LogSection` of `RUN/logs/system.log`: a header, at most
`max_bytes` of output, then one notice saying what was dropped. Once closed, a
section takes no more writes, so the output of a start that is still draining
(a log stream that outlived its container's stop) can never land inside the
next start's section.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import BinaryIO

DEFAULT_MAX_LOG_BYTES = 64 << 20
"""Output kept per start (`--max-log-size`)."""


class LogSection:
    """Appends one start's output to `path`, at most `max_bytes` of it (None: all)."""

    def __init__(
        self, path: Path, header: str, max_bytes: int | None, deferred: bool = False
    ) -> None:
        """`deferred`: hold the output in memory (bounded like the section) until
        `activate`; a section closed before that leaves nothing in the log (a spare
        process that never served)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.header = header
        self.max_bytes = max_bytes
        self.written = 0
        self.dropped = 0
        self._lock = threading.Lock()
        self._closed = False
        # Until activated, the section writes into memory.
        self._held: io.BytesIO | None = io.BytesIO() if deferred else None
        self._out: BinaryIO = self._held if self._held is not None else self._open()

    def _open(self) -> BinaryIO:
        out = self.path.open("ab")
        out.write(f"--- {self.header}\n".encode())
        out.flush()
        return out

    def activate(self) -> None:
        """Start writing into the log: the header, then what was held back."""
        with self._lock:
            if self._held is None or self._closed:
                return
            held, self._held = self._held.getvalue(), None
            self._out = self._open()
            self._out.write(held)
            self._out.flush()

    @property
    def full(self) -> bool:
        return self.max_bytes is not None and self.written >= self.max_bytes

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._closed:
                self.dropped += len(data)
                return
            room = len(data) if self.max_bytes is None else self.max_bytes - self.written
            keep = data[: max(room, 0)]
            if keep:
                self._out.write(keep)
                self._out.flush()
                self.written += len(keep)
            if len(keep) < len(data):
                if not self.dropped:
                    self._out.write(
                        f"\n--- output truncated: this start printed more than {self.max_bytes} "
                        "bytes (--max-log-size); the rest is dropped\n".encode()
                    )
                    self._out.flush()
                self.dropped += len(data) - len(keep)

    def close(self, note: str | None = None) -> None:
        """End the section (idempotent); `note` is written as its last line."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if note and self._held is None:
                self._out.write(f"\n--- {note}\n".encode())
            self._out.close()
