"""A container's output, copied into the run directory while the container runs.

Streaming (rather than collecting at the end) keeps the output of a container
that hangs or dies, and of a harness that is killed: whatever the container
printed is already on disk.
"""

from __future__ import annotations

import threading
from pathlib import Path

import docker.errors
import requests
from docker.models.containers import Container


class LogStream:
    """Appends everything `container` writes (stdout and stderr) to `path`."""

    def __init__(self, container: Container, path: Path, header: str) -> None:
        self.container = container
        self.path = path
        self.header = header
        self._thread = threading.Thread(
            target=self._pump, name=f"logs-{container.name}", daemon=True
        )

    def start(self) -> LogStream:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def _pump(self) -> None:
        with self.path.open("ab") as out:
            out.write(f"--- {self.header}\n".encode())
            out.flush()
            try:
                # follow=True returns everything since the start, then follows
                # until the container stops; nothing is lost between the two.
                for chunk in self.container.logs(stream=True, follow=True):
                    out.write(chunk)
                    out.flush()
            except (docker.errors.APIError, requests.RequestException) as e:
                out.write(f"--- log stream of {self.container.name} broke: {e}\n".encode())

    def join(self, timeout_s: float = 5.0) -> None:
        """Wait for the stream to drain (it ends when the container stops)."""
        self._thread.join(timeout_s)


def tail(container: Container, lines: int = 15) -> str:
    """The container's last output lines, for an error message."""
    try:
        text = container.logs(tail=lines).decode(errors="replace").rstrip()
    except (docker.errors.APIError, requests.RequestException):
        return ""
    return "\n".join("    " + line for line in text.splitlines())
