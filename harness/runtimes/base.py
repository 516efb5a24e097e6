"""The seam every runtime implements: start a system, hand out a ready client."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from apmbench.harness.protocol.client import SystemClient


class Runtime(ABC):
    """Starts a system and hands out a connected, ready client."""

    kind: str = ""

    @property
    @abstractmethod
    def can_restart(self) -> bool: ...

    @abstractmethod
    def start(self) -> SystemClient:
        """Start (or connect to) the system; return once health says SERVING."""

    @abstractmethod
    def restart(self) -> SystemClient:
        """A fresh system with empty memory; the old client must not be used again."""

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Facts about the runtime for manifest.json."""

    def log_tail(self, lines: int = 15) -> str:
        """The end of the system's output since its last start ("" when there is none)."""
        return ""

    def begin_trajectory(self, trajectory_id: str) -> None:  # noqa: B027 - optional hook
        """Called before each trajectory; a runtime may name what it starts after it
        (the Docker runtime names containers per run and trajectory)."""

    def expect_restarts(self) -> None:  # noqa: B027 - optional hook
        """Called once the run knows it restarts the system (`restart` persistence): a
        runtime with spares may start them now, before the first restart asks."""

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
