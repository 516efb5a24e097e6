"""The seam every runtime implements: start a system, hand out a ready client.

A runtime is one class deriving from `Runtime` plus its registration (a line
in `runtimes/registry.py`, or an `apmbench_grpc.runtimes` entry point of an
installed distribution). The class says how it is built from the command
line (`from_spec`), which `--runtime-option KEY=VALUE` it takes (`options`),
and what a report must say of its confinement (`confinement_facts`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from apmbench.harness.protocol.client import Deadlines, SystemClient

if TYPE_CHECKING:
    from apmbench.harness.runtimes import RuntimeSpec


@dataclass(frozen=True)
class Launch:
    """What every runtime is built with besides the command line's spec."""

    run_dir: Path
    """The run directory; the system's output goes under its logs/."""
    deadlines: Deadlines
    startup_timeout_s: float
    hidden: tuple[Path, ...] = ()
    """Host paths a confined system must not see (the dataset)."""


class Runtime(ABC):
    """Starts a system and hands out a connected, ready client."""

    kind: str = ""
    options: ClassVar[Mapping[str, str]] = {}
    """The `--runtime-option KEY=VALUE` keys this runtime takes, each with its help text.
    The built-in runtimes have their own flags (--image, --endpoint, --command, --system)."""

    @classmethod
    def from_spec(cls, spec: RuntimeSpec, launch: Launch) -> Runtime:
        """The runtime the command line asked for (`make_runtime` calls this)."""
        raise NotImplementedError(f"{cls.__name__} does not say how it is built: add from_spec")

    @classmethod
    def confinement_facts(cls, recorded: Mapping[str, Any]) -> dict[str, Any] | None:
        """report.json's `sandbox` entry from this runtime's manifest record (its
        `describe()`): whether the harness confined the system, and how. None when the
        harness does not confine it this way (a server someone else runs; a container,
        whose limits the manifest records under `container`)."""
        return None

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
