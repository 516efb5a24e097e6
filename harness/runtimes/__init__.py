"""Where a system runs. Every command builds its runtime here, from one spec.

- process: a registered system or module:Class as a local child process;
- command: any executable (`--command 'node server.js {address}'`) as a local child
  process, sandboxed and restartable like `system`;
- endpoint: a server someone else started, at an address (cannot restart);
- docker: an image in a hardened container (apmbench.harness.runtimes.docker).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.base import Runtime
from apmbench.harness.runtimes.docker.settings import ContainerSettings
from apmbench.harness.runtimes.endpoint import EndpointRuntime
from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES
from apmbench.harness.runtimes.process import sandboxed_process

__all__ = ["Runtime", "RuntimeSpec", "make_runtime", "wants_spare"]


@dataclass(frozen=True)
class RuntimeSpec:
    """Exactly one of system, endpoint, image, as the command line gave them."""

    system: str | None = None
    """A registered system name or "module:Class", run as a local process."""
    endpoint: str | None = None
    """Address of a server that is already running ("unix:/path" or "host:port")."""
    image: str | None = None
    """A container image that serves the system, run by the Docker runtime."""
    container: ContainerSettings = field(default_factory=ContainerSettings)
    """How the image's container runs (hardened defaults); used with `image` only."""
    sandbox: bool = True
    """Run `system` in a bubblewrap sandbox; False (`--no-sandbox`) runs it unconfined and
    every report says its numbers are not comparable."""
    env: tuple[str, ...] = ()
    """`--env NAME[=VALUE]` for the system's process: the only environment it gets besides
    its own `APMBENCH_VLM_*` settings when sandboxed."""
    sandbox_net: bool = False
    """`--sandbox-net`: sandboxed, but on the host's network (a model endpoint)."""
    command: str | None = None
    """Any server command line with `{address}` in it, run as a local process."""
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES
    """The system's output kept per start (`--max-log-size`); the rest is dropped with a
    notice. None: all of it."""
    spare: bool = False
    """For a local process or a container: start the next restarts' processes while the
    current one works (`evaluate` turns it on unless `--no-spare`; see `wants_spare`)."""
    spare_budget: int | None = None
    """`--spare-memory`: the memory all spares together may hold (each is measured once
    serving, its model included); None: half of the host's available memory."""

    @property
    def name(self) -> str:
        """What the harness calls the system (progress log, manifest's `system_name`): the
        registered name, image or address as given; a command by its executable, or the
        script an interpreter runs (`command_name` has the rule)."""
        if self.command is not None:
            from apmbench.harness.runtimes.command import command_name

            return command_name(self.command, Path.cwd())
        return self.system or self.image or self.endpoint or "endpoint"

    @property
    def label(self) -> str:
        """A file-name-safe name of the system, for default output directories."""
        return self.name.replace(":", "_").replace("/", "_")

    def check_system(self) -> None:
        """Refuse an unknown registered name before anything starts."""
        given = (self.system, self.endpoint, self.image, self.command)
        if sum(x is not None for x in given) != 1:
            raise ConfigError(
                "give exactly one of --system NAME, --command 'CMD {address}', "
                "--endpoint ADDRESS or --image IMAGE"
            )
        if self.system is None or ":" in self.system:
            return
        from apmbench.adapters.systems import REGISTRY

        if self.system not in REGISTRY:
            known = ", ".join(sorted(REGISTRY))
            raise ConfigError(
                f"unknown system {self.system!r}: use one of {known}, or 'package.module:ClassName'"
            )


def make_runtime(
    spec: RuntimeSpec,
    run_dir: Path,
    deadlines: Deadlines,
    startup_timeout_s: float,
    hidden: tuple[Path, ...] = (),
) -> Runtime:
    """The runtime for `spec`; its logs go under `run_dir`/logs. A sandboxed process sees
    neither `run_dir` nor `hidden` (the dataset) nor the synthetic cache."""
    spec.check_system()
    if spec.image is not None:
        # Imported here: the docker SDK loads only for container runs.
        from apmbench.harness.runtimes.docker.runtime import DockerRuntime

        return DockerRuntime(
            spec.image,
            run_dir,
            deadlines,
            spec.container,
            startup_timeout_s,
            max_log_bytes=spec.max_log_bytes,
            spare=wants_spare(spec),
            spare_budget_bytes=spec.spare_budget,
        )
    if spec.endpoint is not None:
        return EndpointRuntime(spec.endpoint, deadlines, startup_timeout_s)
    if spec.command is not None:
        from apmbench.harness.runtimes.command import command_process

        return command_process(
            spec.command,
            run_dir / "logs" / "system.log",
            deadlines,
            startup_timeout_s,
            sandbox=spec.sandbox,
            env=spec.env,
            hidden=(*hidden, run_dir),
            share_net=spec.sandbox_net,
            max_log_bytes=spec.max_log_bytes,
            spare=wants_spare(spec),
            spare_budget_bytes=spec.spare_budget,
        )
    assert spec.system is not None
    return sandboxed_process(
        spec.system,
        run_dir / "logs" / "system.log",
        deadlines,
        startup_timeout_s,
        sandbox=spec.sandbox,
        env=spec.env,
        hidden=(*hidden, run_dir),
        share_net=spec.sandbox_net,
        max_log_bytes=spec.max_log_bytes,
        spare=wants_spare(spec),
        spare_budget_bytes=spec.spare_budget,
    )


MODEL_ENV = "APMBENCH_VLM_MODEL"


def wants_spare(spec: RuntimeSpec, environ: Mapping[str, str] | None = None) -> bool:
    """Whether restarts get spares: asked for, and no network the serving system and a
    spare share. A spare lives beside the serving process: sandboxed, each has its own
    network namespace (a container on network `none` too), but on the host's network
    (`--sandbox-net`, a container network) the serving one could hand its memory to it
    over a socket. A spare loads at its start whatever the system loads, a model too: how
    many spares there are is bounded by `spare_budget` (`SparePlan`), not by whether a
    model is named (`environ` is kept for callers that pass one)."""
    del environ
    if spec.image is not None:
        return spec.spare and spec.container.network == "none"
    return spec.spare and not spec.sandbox_net
