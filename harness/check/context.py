"""What every check works with: the runtime, a connected client, the system's description."""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from apmbench.adapters.sdk.types import Query, StateManifest, SystemInfo
from apmbench.harness.check.verdicts import NotApplicable
from apmbench.harness.protocol.client import QueryResult, SystemClient
from apmbench.harness.runtimes.base import Runtime

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

LARGE_STATE_BYTES = 64 << 20


@dataclass(frozen=True)
class CheckSettings:
    query_timeout_s: float = 60.0
    """Deadline of each Query the checks send (the cancellation check sets shorter ones)."""
    large_state_bytes: int = LARGE_STATE_BYTES
    """The state size the large-transfer check grows the memory past."""
    large_state_frames: int = 2000
    """At most this many frames are pushed to grow the memory."""


@dataclass(frozen=True)
class Export:
    manifest: StateManifest
    data: bytes
    chunk_sizes: tuple[int, ...]
    """Data bytes of each chunk after the manifest, as they arrived."""
    seconds: float


class _Chunks(io.BytesIO):
    """A sink that remembers how many bytes each write (one chunk) carried."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def write(self, data: ReadableBuffer, /) -> int:
        self.sizes.append(memoryview(data).nbytes)  # len(data) for the bytes the client writes
        return super().write(data)


Memo = TypedDict("Memo", {"probe-answers": list[tuple[Query, QueryResult]]}, total=False)
"""What several checks read, computed once: the probe queries and their answers."""


class CheckContext:
    def __init__(self, runtime: Runtime, client: SystemClient, settings: CheckSettings) -> None:
        self.runtime = runtime
        self.client = client
        self.settings = settings
        self.described: SystemInfo | None = None
        """Describe's answer once the version check accepted it; None before or when refused."""
        self.memo: Memo = {}
        """Results that several checks read (e.g. the probe answers), computed once."""
        self._ids = itertools.count(1)

    @property
    def info(self) -> SystemInfo:
        if self.described is None:
            raise NotApplicable(
                "the system gave no Describe this harness can use (see describe-version)",
                "fix describe-version first",
            )
        return self.described

    def fresh(self, label: str) -> str:
        """Reset the system for a new trajectory of its own; returns the trajectory id."""
        trajectory_id = f"apmbench-check-{label}-{next(self._ids)}"
        self.client.reset(trajectory_id)
        return trajectory_id

    def export(self, max_chunk_bytes: int = 0) -> Export:
        """The whole state in memory, with its chunk sizes; the client verifies the manifest."""
        sink = _Chunks()
        result = self.client.export_state(sink, max_chunk_bytes)
        return Export(result.manifest, sink.getvalue(), tuple(sink.sizes), result.seconds)

    def require_import(self) -> None:
        if not self.info.capabilities.supports_import:
            raise NotApplicable(
                f"{self.info.name} declares supports_import = false",
                "declare supports_import = true and implement import_state to enable it",
            )

    def restart(self) -> SystemClient:
        if not self.runtime.can_restart:
            raise NotApplicable(
                f"the {self.runtime.kind} runtime cannot restart the server",
                "run check with --system or --image to test a restart",
            )
        self.client = self.runtime.restart()
        return self.client
