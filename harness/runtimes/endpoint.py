"""A server someone else runs: connected to, never restarted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from apmbench.adapters.sdk import errors
from apmbench.harness.errors import ConfigError, RuntimeStartError
from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.harness.runtimes.base import Launch, Runtime, RuntimeConfig, RuntimeRecord

if TYPE_CHECKING:
    from apmbench.harness.runtimes import RuntimeSpec


@dataclass(frozen=True)
class EndpointConfig(RuntimeConfig):
    """`--endpoint ADDRESS`: where the server listens ("unix:/path" or "host:port")."""

    address: str

    @property
    def name(self) -> str:
        return self.address

    def spares_allowed(self) -> bool:
        return False  # the harness starts nothing here

    def resume_identity(self, runtime: Runtime) -> str:
        return self.address


class EndpointRecord(RuntimeRecord):
    address: str


class EndpointRuntime(Runtime):
    kind = "endpoint"
    config_type = EndpointConfig

    @classmethod
    def from_spec(cls, spec: RuntimeSpec, launch: Launch) -> EndpointRuntime:
        config = spec.config_as(EndpointConfig)
        return cls(config.address, launch.deadlines, launch.startup_timeout_s)

    def __init__(self, address: str, deadlines: Deadlines, startup_timeout_s: float = 30.0) -> None:
        self.address = address
        self.deadlines = deadlines
        self.startup_timeout_s = startup_timeout_s
        self._client: SystemClient | None = None

    @property
    def can_restart(self) -> bool:
        return False

    def start(self) -> SystemClient:
        client = SystemClient(self.address, self.deadlines)
        try:
            client.wait_serving(self.startup_timeout_s)
        except errors.Unavailable as e:
            client.close()
            raise RuntimeStartError(f"endpoint {self.address}: {e}") from e
        self._client = client
        return client

    def start_for_check(self) -> SystemClient:
        # The server is already up: one without a health service is still checked (its
        # health check fails). The client is this runtime's, closed by `stop`.
        client = SystemClient(self.address, self.deadlines)
        try:
            client.wait_serving(self.startup_timeout_s)
        except errors.Unimplemented:
            pass
        except errors.Unavailable:
            client.close()
            raise
        self._client = client
        return client

    def restart(self) -> SystemClient:
        raise ConfigError(
            f"endpoint {self.address} cannot be restarted: use --persistence reset or trust"
        )

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def describe(self) -> EndpointRecord:
        return {"kind": self.kind, "address": self.address}
