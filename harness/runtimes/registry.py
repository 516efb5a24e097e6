"""Runtimes by name: the built-ins, and those installed distributions register.

A runtime's name is its `Runtime.kind`, which its manifest record carries, so a
finished run finds the class that can say how it was confined. Strings only:
the Docker runtime's SDK loads only for a container run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apmbench.adapters.sdk.registry import Registry
from apmbench.harness.errors import ConfigError

if TYPE_CHECKING:
    from apmbench.harness.runtimes.base import Runtime

BUILTIN: dict[str, str] = {
    "process": "apmbench.harness.runtimes.process:ProcessRuntime",
    "command": "apmbench.harness.runtimes.command:CommandRuntime",
    "endpoint": "apmbench.harness.runtimes.endpoint:EndpointRuntime",
    "docker": "apmbench.harness.runtimes.docker.runtime:DockerRuntime",
}
RUNTIME_REGISTRY: Registry[type[Runtime]] = Registry(
    "runtime", BUILTIN, "apmbench.harness.runtimes.base:Runtime", error=ConfigError
)
