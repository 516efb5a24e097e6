"""Where a system runs. Every command builds its runtime here, from one spec.

- process: a registered system or module:Class as a local child process;
- command: any executable (`--command 'node server.js {address}'`) as a local child
  process, sandboxed and restartable like `system`;
- endpoint: a server someone else started, at an address (cannot restart);
- docker: an image in a hardened container (apmbench.harness.runtimes.docker);
- any other runtime by name (`--runtime NAME --runtime-option KEY=VALUE`), registered
  in `runtimes/registry.py` or by an installed distribution's entry point.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.base import Launch, Runtime
from apmbench.harness.runtimes.docker.settings import ContainerSettings
from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES
from apmbench.harness.runtimes.registry import RUNTIME_REGISTRY

__all__ = ["Launch", "Runtime", "RuntimeSpec", "make_runtime", "wants_spare"]


@dataclass(frozen=True)
class RuntimeSpec:
    """Exactly one of system, endpoint, image, command, runtime, as the command line gave
    them."""

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
    runtime: str | None = None
    """`--runtime NAME`: a runtime registered by name (an installed plugin's) instead of one
    of the four above; it reads its settings from `runtime_options`."""
    runtime_options: tuple[tuple[str, str], ...] = ()
    """`--runtime-option KEY=VALUE` for `runtime`: only the keys it declares (`options`)."""
    start: str = "fresh"
    """`--start`: how a sandboxed `system` process starts: "fresh" (a new bubblewrap box
    and interpreter each time) or "template" (a fork of the run's pre-imported template,
    confined further before the system loads; harness/runtimes/template.py)."""

    @property
    def kind(self) -> str:
        """The registered runtime this spec asks for: the one its option names."""
        if self.runtime is not None:
            return self.runtime
        if self.image is not None:
            return "docker"
        if self.endpoint is not None:
            return "endpoint"
        return "command" if self.command is not None else "process"

    @property
    def name(self) -> str:
        """What the harness calls the system (progress log, manifest's `system_name`): the
        registered name, image or address as given; a command by its executable, or the
        script an interpreter runs (`command_name` has the rule)."""
        if self.command is not None:
            from apmbench.harness.runtimes.command import command_name

            return command_name(self.command, Path.cwd())
        return self.system or self.image or self.endpoint or self.runtime or "endpoint"

    @property
    def label(self) -> str:
        """A file-name-safe name of the system, for default output directories."""
        return self.name.replace(":", "_").replace("/", "_")

    def check_system(self) -> None:
        """Refuse an unknown registered name before anything starts."""
        given = (self.system, self.endpoint, self.image, self.command, self.runtime)
        if sum(x is not None for x in given) != 1:
            raise ConfigError(
                "give exactly one of --system NAME, --command 'CMD {address}', "
                "--endpoint ADDRESS, --image IMAGE or --runtime NAME"
            )
        if self.runtime_options and self.runtime is None:
            raise ConfigError("--runtime-option: only with --runtime NAME")
        if self.container.gpus.wanted and self.kind not in ("docker", "process", "command"):
            raise ConfigError(
                f"--gpus {self.container.gpus.describe()}: only for --image, --system or "
                "--command (the harness starts the server: an endpoint or another runtime "
                "holds its own devices)"
            )
        if self.system is None or ":" in self.system:
            return
        from apmbench.adapters.systems import SYSTEM_REGISTRY, UnknownSystem

        try:
            SYSTEM_REGISTRY.entry(self.system)
        except UnknownSystem as e:
            raise ConfigError(str(e)) from e


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
    runtime = RUNTIME_REGISTRY.load(spec.kind)
    unknown = sorted({key for key, _ in spec.runtime_options} - set(runtime.options))
    if unknown:
        takes = ", ".join(sorted(runtime.options)) or "none"
        raise ConfigError(
            f"runtime {spec.kind!r} takes no option {', '.join(unknown)} (it takes: {takes})"
        )
    return runtime.from_spec(spec, Launch(run_dir, deadlines, startup_timeout_s, hidden))


MODEL_ENV = "APMBENCH_VLM_MODEL"


def wants_spare(spec: RuntimeSpec, environ: Mapping[str, str] | None = None) -> bool:
    """Whether restarts get spares: asked for, and no network the serving system and a
    spare share. A spare lives beside the serving process: sandboxed, each has its own
    network namespace (a container on network `none` too), but on the host's network
    (`--sandbox-net`, a container network) the serving one could hand its memory to it
    over a socket. A spare loads at its start whatever the system loads, a model too: how
    many spares there are is bounded by `spare_budget` (`SparePlan`), not by whether a
    model is named (`environ` is kept for callers that pass one). Never with `--gpus`."""
    del environ
    if spec.container.gpus.wanted:
        # A spare on the same GPU loads while the live system serves: both read and move
        # the device's free memory, utilisation and clocks (NVML, cudaMemGetInfo), a channel
        # no sandbox closes (docs/guarantees.md, "A method on a GPU").
        return False
    if spec.image is not None:
        return spec.spare and spec.container.network == "none"
    return spec.spare and not spec.sandbox_net
