"""A container's output, copied into the run directory while the container runs.

Streaming (rather than collecting at the end) keeps the output of a container
that hangs or dies, and of a harness that is killed: whatever the container
printed is already on disk. Each start writes its own bounded `LogSection`;
once the section is full the stream is closed (the engine's own copy is
bounded by its log driver's size, `log_config`).
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import docker.errors
import requests
from docker.models.containers import Container
from docker.types import LogConfig

from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES, LogSection

# The engine's own copy (what `docker logs` and error-message tails read) when no cap is set.
_ENGINE_LOG_BYTES = 64 << 20


def log_config(max_bytes: int | None) -> LogConfig:
    """The json-file driver with a size bound, so a flooding container cannot fill the
    engine's disk either."""
    size = max(max_bytes or _ENGINE_LOG_BYTES, 1 << 20)
    return LogConfig(type="json-file", config={"max-size": str(size), "max-file": "1"})


class LogStream:
    """Appends everything `container` writes (stdout and stderr) to `path`."""

    def __init__(
        self,
        container: Container,
        path: Path,
        header: str,
        max_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
        deferred: bool = False,
    ) -> None:
        self.container = container
        self.deferred = deferred
        """Hold the output back until `section.activate()` (the previous start's section is
        still being written)."""
        self.path = path
        self.header = header
        self.max_bytes = max_bytes
        self.section: LogSection | None = None
        self._stream: Any = None
        self._thread = threading.Thread(
            target=self._pump, name=f"logs-{container.name}", daemon=True
        )

    def start(self) -> LogStream:
        self.section = LogSection(self.path, self.header, self.max_bytes, self.deferred)
        self._thread.start()
        return self

    def _pump(self) -> None:
        section = self.section
        assert section is not None
        try:
            # follow=True returns everything since the start, then follows
            # until the container stops; nothing is lost between the two.
            self._stream = self.container.logs(stream=True, follow=True)
            for chunk in self._stream:
                section.write(chunk)
                if section.dropped:
                    # Truncated, with its notice: stop reading (the engine's copy is bounded).
                    break
        except (docker.errors.APIError, requests.RequestException, OSError, ValueError) as e:
            section.close(f"log stream of {self.container.name} broke: {e}")
        finally:
            self._close_stream()

    def _close_stream(self) -> None:
        stream = self._stream
        if stream is not None and hasattr(stream, "close"):
            with contextlib.suppress(Exception):
                stream.close()

    def join(self, timeout_s: float = 5.0) -> None:
        """Wait for the stream to drain (it ends when the container stops); then the section
        is closed, so whatever a stream still sends cannot reach the next start's section."""
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._close_stream()
        if self.section is not None:
            self.section.close(
                f"the log stream did not end within {timeout_s:g} s of the stop; "
                "the rest of this start's output is dropped"
                if self._thread.is_alive()
                else None
            )


def tail(container: Container, lines: int = 15) -> str:
    """The container's last output lines, for an error message."""
    try:
        text = container.logs(tail=lines).decode(errors="replace").rstrip()
    except (docker.errors.APIError, requests.RequestException):
        return ""
    return "\n".join("    " + line for line in text.splitlines())
