"""Types shared by the RPC-level tests."""

from __future__ import annotations

from collections.abc import Callable

from apmbench.adapters.sdk import MemorySystem
from apmbench.harness.protocol.client import SystemClient

Serve = Callable[[MemorySystem], SystemClient]
"""Start a system in this process and return a connected, ready client."""
