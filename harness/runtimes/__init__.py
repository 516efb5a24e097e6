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
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.base import (
    Confinement,
    Launch,
    PluginOptions,
    Runtime,
    RuntimeConfig,
    RuntimeRecord,
)
from apmbench.harness.runtimes.docker.settings import ContainerSettings
from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES
from apmbench.harness.runtimes.registry import RUNTIME_REGISTRY

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "Confinement",
    "Launch",
    "Runtime",
    "RuntimeConfig",
    "RuntimeRecord",
    "RuntimeSpec",
    "confinement",
    "make_runtime",
    "resume_facts",
    "runtime_spec",
    "wants_spare",
]

C = TypeVar("C", bound=RuntimeConfig)


@dataclass(frozen=True)
class RuntimeSpec:
    """Which runtime runs the system (`kind`, its registered name), its own settings
    (`config`, of its `config_type`), and the settings every runtime the harness starts
    shares. Built from the command line by `runtime_spec`; callers ask it what they need to
    know (`name`, `system_spec`, `wants_spare`), never which runtime it is."""

    kind: str
    config: RuntimeConfig
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES
    """The system's output kept per start (`--max-log-size`); the rest is dropped with a
    notice. None: all of it."""
    spare: bool = False
    """Start the next restarts' systems while the current one works, where the runtime's
    settings allow (`evaluate` turns it on unless `--no-spare`; see `wants_spare`)."""
    spare_budget: int | None = None
    """`--spare-memory`: the memory all spares together may hold (each is measured once
    serving, its model included); None: half of the host's available memory."""

    @property
    def name(self) -> str:
        """What the harness calls the system (progress log, manifest's `system_name`): what
        the runtime's settings name it (a registered name, image or address as given; a
        command by its executable or script), else the runtime's name."""
        return self.config.name or self.kind

    @property
    def label(self) -> str:
        """A file-name-safe name of the system, for default output directories."""
        return self.name.replace(":", "_").replace("/", "_")

    @property
    def runtime_options(self) -> tuple[tuple[str, str], ...]:
        """`--runtime-option KEY=VALUE` as given, for a runtime chosen by `--runtime NAME`
        (a plugin's `from_spec` reads them here)."""
        return self.config.option_pairs()

    @property
    def wants_spare(self) -> bool:
        """Whether restarts get spares: asked for, and allowed by the runtime's settings. A
        spare lives beside the serving system: sandboxed, each has its own network namespace
        (a container on network `none` too), but on the host's network (`--sandbox-net`, a
        container network) the serving one could hand its memory to it over a socket; and
        never with `--gpus` (a spare on the same GPU loads while the live system serves:
        both read and move the device's free memory, utilisation and clocks, a channel no
        sandbox closes; docs/guarantees.md, "A method on a GPU"). A spare loads at its start
        whatever the system loads, a model too: how many spares there are is bounded by
        `spare_budget` (`SparePlan`), not by whether a model is named."""
        return self.spare and self.config.spares_allowed()

    def config_as(self, config_type: type[C]) -> C:
        """`config` as the runtime reading it expects it; a ConfigError when the command
        line chose this runtime in a way that does not give its settings (`--runtime
        NAME` for a runtime that has options of its own)."""
        if not isinstance(self.config, config_type):
            raise ConfigError(
                f"the {self.kind} runtime is not chosen with --runtime: give it by its own "
                "options (--system, --command, --endpoint or --image)"
            )
        return self.config

    def system_spec(self, runtime: Runtime) -> str | None:
        """What `--resume` must find unchanged of the system (the manifest's `system_spec`),
        asked once `runtime` has started: an image by its id too, so a rebuilt image under
        the same tag is a different system."""
        return self.config.resume_identity(runtime)

    def check_system(self) -> None:
        """Refuse an unknown registered name before anything starts."""
        self.config.check()


def runtime_spec(
    *,
    system: str | None = None,
    endpoint: str | None = None,
    image: str | None = None,
    command: str | None = None,
    runtime: str | None = None,
    runtime_options: tuple[tuple[str, str], ...] = (),
    container: ContainerSettings | None = None,
    sandbox: bool = True,
    sandbox_net: bool = False,
    env: tuple[str, ...] = (),
    start: str = "fresh",
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
    spare: bool = False,
    spare_budget: int | None = None,
) -> RuntimeSpec:
    """The spec for the runtime options as the command line gave them: exactly one of
    `--system`, `--command`, `--endpoint`, `--image` or `--runtime` names the runtime (the
    one place that maps an option to a runtime), and each runtime's config takes only the
    settings it reads. `sandbox`, `sandbox_net` and `env` (`--env` for a process: a
    container's is in `container`) go to a `--system` or `--command` process, `start` to a
    `--system` one (or `--command`, for "snapshot"), `container` to an image, and its
    `--gpus` to a process as well."""
    given = (system, endpoint, image, command, runtime)
    if sum(x is not None for x in given) != 1:
        raise ConfigError(
            "give exactly one of --system NAME, --command 'CMD {address}', "
            "--endpoint ADDRESS, --image IMAGE or --runtime NAME"
        )
    if runtime_options and runtime is None:
        raise ConfigError("--runtime-option: only with --runtime NAME")
    container = container or ContainerSettings()
    gpus = container.gpus
    if gpus.wanted and (endpoint is not None or runtime is not None):
        raise ConfigError(
            f"--gpus {gpus.describe()}: only for --image, --system or --command (the harness "
            "starts the server: an endpoint or another runtime holds its own devices)"
        )
    config: RuntimeConfig
    if system is not None:
        from apmbench.harness.runtimes.process import ProcessConfig, ProcessRuntime

        kind = ProcessRuntime.kind
        config = ProcessConfig(
            system=system, sandbox=sandbox, sandbox_net=sandbox_net, env=env, gpus=gpus, start=start
        )
    elif command is not None:
        from apmbench.harness.runtimes.command import CommandConfig, CommandRuntime

        kind = CommandRuntime.kind
        config = CommandConfig(
            command=command, sandbox=sandbox, sandbox_net=sandbox_net, env=env, gpus=gpus,
            start=start,
        )  # fmt: skip
    elif image is not None:
        from apmbench.harness.runtimes.docker.runtime import DockerConfig, DockerRuntime

        kind, config = DockerRuntime.kind, DockerConfig(image=image, container=container)
    elif endpoint is not None:
        from apmbench.harness.runtimes.endpoint import EndpointConfig, EndpointRuntime

        kind, config = EndpointRuntime.kind, EndpointConfig(address=endpoint)
    else:
        assert runtime is not None
        kind, config = runtime, PluginOptions(runtime_options)
    return RuntimeSpec(kind, config, max_log_bytes, spare, spare_budget)


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
    """`spec.wants_spare` (`environ` is kept for callers that pass one: a model named in it
    no longer matters, the budget bounds the spares)."""
    del environ
    return spec.wants_spare


def resume_facts(recorded: Mapping[str, object]) -> dict[str, object]:
    """What a resumed run must keep of the `runtime` a manifest records, as the runtime
    that ran it says (`Runtime.resume_facts`); a runtime no longer installed: its kind."""
    kind = recorded.get("kind")
    if not isinstance(kind, str) or kind not in RUNTIME_REGISTRY:
        return {"kind": kind, "max_log_bytes": recorded.get("max_log_bytes")}
    return RUNTIME_REGISTRY.load(kind).resume_facts(recorded)


def confinement(recorded: Mapping[str, object]) -> Confinement | None:
    """report.json's `sandbox` entry from the `runtime` a run's manifest records: whether
    the system was confined, as the runtime that ran it says
    (`Runtime.confinement_facts`). None for runtimes the harness does not sandbox this way
    (endpoint, image), and for a runtime no longer installed."""
    kind = recorded.get("kind")
    if not isinstance(kind, str) or kind not in RUNTIME_REGISTRY:
        return None
    return RUNTIME_REGISTRY.load(kind).confinement_facts(recorded)
