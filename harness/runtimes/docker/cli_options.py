"""`--image` and the container options of `evaluate`, as one decorator.

The decorated command receives `image` (str | None) and `container`
(`ContainerSettings`) instead of the individual options, so the command
module stays small and every relaxation is parsed and checked in one place.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes.docker.settings import (
    BindMount,
    ContainerSettings,
    GpuRequest,
    parse_count,
    parse_size,
)

_DEFAULTS = ContainerSettings()
PROCESS_TOO = ("gpus",)
"""Options that a sandboxed --system or --command takes too (the box passes the GPUs)."""
# What each option is when not given: the click defaults, and how options given
# without --image are recognised (and refused).
OPTION_DEFAULTS: dict[str, object] = {
    "gpus": "none", "allow_network": False, "network": None, "allow_loopback": False,
    "writable_root": False,
    "container_user": None, "cap_add": (), "allow_new_privileges": False, "memory": "16g",
    "cpus": "4", "pids_limit": "4096", "shm_size": "1g", "tmp_size": "4g", "container_env": (),
    "container_mount": (),
}  # fmt: skip
_OPTIONS = [
    click.option(
        "--image",
        default=None,
        help="Container image that serves the system; runs it with the Docker runtime "
        "(no network, read-only root, non-root, no capabilities, resource limits).",
    ),
    click.option(
        "--gpus",
        default=OPTION_DEFAULTS["gpus"],
        show_default=True,
        help="GPUs for --image, --system or --command: none, all, a count, or device ids "
        "(e.g. 0,1; for --system and --command the N of /dev/nvidiaN, also device=0). A "
        "sandboxed system then gets those device nodes and the driver's libraries "
        "(read-only), and no spare.",
    ),
    click.option(
        "--allow-network",
        is_flag=True,
        help="Give the --image container the engine's default network (e.g. a method that "
        "calls a remote API). Recorded in the manifest.",
    ),
    click.option(
        "--network",
        default=None,
        help="Put the --image container on this Docker network instead (implies --allow-network).",
    ),
    click.option(
        "--allow-loopback",
        is_flag=True,
        help="On no network, still let the container open IP sockets on its own loopback "
        "(a method that runs its own model server inside). Recorded: its packets move "
        "host-wide counters a later container reads (docs/guarantees.md).",
    ),
    click.option(
        "--writable-root",
        is_flag=True,
        help="Do not make the container's root filesystem read-only.",
    ),
    click.option(
        "--user",
        "container_user",
        default=None,
        help="uid[:gid] in the container. Default: the harness's own uid, or 10001 when the "
        "harness runs as root; 0 runs it as root.",
    ),
    click.option("--cap-add", multiple=True, help="Give back one Linux capability (repeatable)."),
    click.option(
        "--allow-new-privileges", is_flag=True, help="Drop the no-new-privileges security option."
    ),
    click.option(
        "--memory",
        default=OPTION_DEFAULTS["memory"],
        show_default=True,
        help="Container memory limit (no swap), or 'none'.",
    ),
    click.option(
        "--cpus",
        default=OPTION_DEFAULTS["cpus"],
        show_default=True,
        help="Container CPU limit in cores (capped at the engine's), or 'none'.",
    ),
    click.option(
        "--pids-limit",
        default=OPTION_DEFAULTS["pids_limit"],
        show_default=True,
        help="Container process/thread limit.",
    ),
    click.option(
        "--shm-size",
        default=OPTION_DEFAULTS["shm_size"],
        show_default=True,
        help="Size of /dev/shm.",
    ),
    click.option(
        "--tmp-size",
        default=OPTION_DEFAULTS["tmp_size"],
        show_default=True,
        help="Size of the /tmp tmpfs.",
    ),
    click.option(
        "--env",
        "container_env",
        multiple=True,
        help="KEY=VALUE for the container's environment (repeatable; names go in the manifest).",
    ),
    click.option(
        "--mount",
        "container_mount",
        multiple=True,
        help="HOST_PATH:CONTAINER_PATH[:ro|rw]: a host directory in the container, read-only "
        "unless :rw (e.g. a model: --mount /models/qwen:/models/vlm). Recorded in the manifest.",
    ),
]


def _size(text: str, option: str) -> int:
    size = parse_size(text, option)
    if size is None:
        raise ConfigError(f"{option} {text!r}: give a size such as 64m or 1g")
    return size


def container_settings(
    gpus: str,
    allow_network: bool,
    network: str | None,
    writable_root: bool,
    container_user: str | None,
    cap_add: tuple[str, ...],
    allow_new_privileges: bool,
    memory: str,
    cpus: str,
    pids_limit: str,
    shm_size: str,
    tmp_size: str,
    container_env: tuple[str, ...],
    container_mount: tuple[str, ...] = (),
    allow_loopback: bool = False,
) -> ContainerSettings:
    """The options as settings; raises ConfigError naming the option to fix."""
    user = container_user if container_user is not None else _DEFAULTS.user
    if user in ("root", "0"):
        user = "0:0"
    pids = parse_count(pids_limit, "--pids-limit", integer=True)
    return ContainerSettings(
        network=network or ("bridge" if allow_network else "none"),
        read_only_root=not writable_root,
        loopback=allow_loopback,
        user=user,
        cap_add=tuple(c.upper().removeprefix("CAP_") for c in cap_add),
        no_new_privileges=not allow_new_privileges,
        memory_bytes=parse_size(memory, "--memory"),
        cpus=parse_count(cpus, "--cpus", integer=False),
        pids=None if pids is None else int(pids),
        shm_bytes=_size(shm_size, "--shm-size"),
        tmp_bytes=_size(tmp_size, "--tmp-size"),
        gpus=GpuRequest.parse(gpus),
        env=ContainerSettings.parse_env(container_env),
        mounts=tuple(BindMount.parse(m) for m in container_mount),
    )


def container_options(command: Callable[..., object]) -> Callable[..., object]:
    """Add the options; call `command(..., image=..., container=ContainerSettings)`."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> object:
        image = kwargs.pop("image")
        picked = {name: kwargs.pop(name) for name in OPTION_DEFAULTS}
        if image is None:
            given = [
                "--" + name.removeprefix("container_").replace("_", "-")
                for name, value in picked.items()
                if value != OPTION_DEFAULTS[name] and name not in PROCESS_TOO
            ]
            if given:
                raise click.UsageError(f"{', '.join(given)}: only for --image (a container)")
        try:
            container = container_settings(**picked)
        except ConfigError as e:
            raise click.UsageError(str(e)) from e
        return command(*args, image=image, container=container, **kwargs)

    decorated: Callable[..., object] = wrapper
    for option in reversed(_OPTIONS):
        decorated = option(decorated)
    return decorated
