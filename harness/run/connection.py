"""The system as a run reaches it: its runtime, the client of its current start and what
it described of itself. A restart replaces the client here, so the runner, the audits and
the pipeline that share one connection always talk to the live start, and no stage hands
a client back to another."""

from __future__ import annotations

from dataclasses import dataclass

from apmbench.adapters.sdk.types import SystemInfo
from apmbench.harness.protocol.client import SystemClient
from apmbench.harness.runtimes.base import Runtime


@dataclass
class Connection:
    runtime: Runtime
    client: SystemClient
    """The current start's client; replaced by `restart`."""
    info: SystemInfo
    """What the system's Describe said at the first start."""

    def restart(self) -> SystemClient:
        """A fresh start of the system (`restart` persistence): its client from now on."""
        self.client = self.runtime.restart()
        return self.client
