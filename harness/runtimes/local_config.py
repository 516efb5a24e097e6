"""What every process the harness starts on this host shares, `--system` and `--command`
alike.

`LocalConfig` holds the settings both take (the sandbox, its network, `--env`, `--gpus`) and
says whether they allow spares; `LocalFacts` and `LocalRecord` are what the manifest records
of such a process (`ProcessRuntime.local_facts`); `gpu_passthrough` checks `--gpus` against
the other options and finds the device nodes and libraries the box gets (gpu.py), before
anything starts. The `--system` runtime (process.py) and the `--command` runtime
(command.py) each extend them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NotRequired, TypedDict

from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes.base import RuntimeConfig, RuntimeRecord
from apmbench.harness.runtimes.docker.settings import GpuRequest

if TYPE_CHECKING:
    from apmbench.harness.runtimes.gpu import GpuPassthrough


@dataclass(frozen=True, kw_only=True)
class LocalConfig(RuntimeConfig):
    """What a process the harness starts on this host is run with (`--system` and
    `--command` alike)."""

    sandbox: bool = True
    """Run it in a bubblewrap sandbox; False (`--no-sandbox`) runs it unconfined and every
    report says its numbers are not comparable."""
    sandbox_net: bool = False
    """`--sandbox-net`: sandboxed, but on the host's network (a model endpoint)."""
    env: tuple[str, ...] = ()
    """`--env NAME[=VALUE]`: the only environment it gets besides its own `APMBENCH_VLM_*`
    settings when sandboxed."""
    gpus: GpuRequest = field(default_factory=GpuRequest)
    """`--gpus`: the NVIDIA devices its box gets (gpu.py)."""

    def spares_allowed(self) -> bool:
        # On the host's network the serving process could hand its memory to a spare over
        # a socket; on a GPU both would read each other's use of the device.
        return not self.sandbox_net and not self.gpus.wanted


class SparesRecord(TypedDict):
    frozen_once_loaded: bool
    """Whether each spare is frozen once loaded (its cgroup's freezer)."""


class LocalFacts(TypedDict):
    """The facts of a process this harness starts, `--system` and `--command` alike."""

    sandbox: dict[str, object]
    """The sandbox's facts (`Sandbox.describe`), or that there was none."""
    max_log_bytes: int | None
    spare: bool
    start: str
    page_cache: NotRequired[dict[str, object]]
    spares: NotRequired[SparesRecord]
    template: NotRequired[dict[str, object]]


class LocalRecord(RuntimeRecord, LocalFacts):
    """manifest.json's `runtime` for a process this harness starts."""


def gpu_passthrough(
    gpus: GpuRequest | None, sandbox: bool, start: str = "fresh"
) -> GpuPassthrough | None:
    """What `--gpus` gives a sandboxed process's box (gpu.py), found before anything starts:
    a ConfigError (exit 2) names a device node this host lacks, or an option it does not go
    with."""
    from apmbench.harness.runtimes.gpu import GpuPassthrough

    if gpus is None or not gpus.wanted:
        return None
    if not sandbox:
        raise ConfigError(
            f"--gpus {gpus.describe()}: an unconfined process (--no-sandbox) already sees every "
            "GPU of the host; drop --gpus, or drop --no-sandbox to run it confined with that GPU"
        )
    if start == "template":
        raise ConfigError(
            f"--gpus {gpus.describe()}: not with --start template (its starts share one box's "
            "/dev); use --start fresh"
        )
    return GpuPassthrough.find(gpus)
