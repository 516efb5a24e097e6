"""What every judge backend offers the gated scorer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from apmbench.harness.json_types import JsonObject

Messages = Sequence[Mapping[str, str]]


class ChatBackend(Protocol):
    cache_identity: JsonObject
    """The judge model and every setting that changes its replies: the cache key's first half."""
    identity: JsonObject
    """`cache_identity` plus what describes the backend to a reader (URL, versions)."""
    max_concurrency: int
    calls: int
    """Calls that reached the model (cache hits never do)."""

    def complete(self, messages: Messages) -> str:
        """The judge's reply text at temperature 0; `JudgeUnavailable` if none could be had."""
        ...

    def close(self) -> None: ...
