"""What every command shares: the console, exit codes, error reporting."""

from __future__ import annotations

import functools
import signal
import sys
from collections.abc import Callable

import click
from rich.console import Console

from apmbench.harness.stopping import Stopped, stop_signals_interrupt

__all__ = ["Stopped", "interrupted_exit", "stop_signals_interrupt", "stoppable"]

EXIT_USAGE = 2
"""Bad input or settings: the message says what to fix; nothing was started."""
EXIT_SYSTEM = 3
"""The system or its runtime failed; finished work is kept."""
EXIT_FAILED_CHECKS = 1
EXIT_INTERRUPTED = 130

console = Console(stderr=True, soft_wrap=True)


def interrupted_exit(e: KeyboardInterrupt) -> tuple[int, str]:
    """The exit code and the words for a run stopped by Ctrl-C or a stop signal."""
    if isinstance(e, Stopped):
        return e.exit_code, f"stopped by {signal.Signals(e.signum).name}"
    return EXIT_INTERRUPTED, "interrupted"


def _late_signal(signum: int, frame: object) -> None:
    """A stop signal after the command ended: dropped."""


def stoppable(command: Callable[..., object]) -> Callable[..., object]:
    """Run `command` with SIGTERM and SIGHUP raising `Stopped` from its first line on; one
    that arrives outside the run itself (preparing a dataset) exits with its code too."""

    @functools.wraps(command)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            with stop_signals_interrupt():
                return command(*args, **kwargs)
        except KeyboardInterrupt as e:
            code, what = interrupted_exit(e)
            console.print(f"{what} outside a run: no system was running, nothing to clean up")
            sys.exit(code)
        finally:
            # The command is over: a stop signal from here to the exit has nothing left to
            # stop (see cli.run; a Python handler, so processes started later inherit none).
            for s in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(s, _late_signal)

    return wrapper


def start_option(command: Callable[..., object]) -> Callable[..., object]:
    """`--start fresh|template|snapshot` for a sandboxed `--system` (snapshot for a
    `--command` too); call `command(..., start_mode=str)` (refused for any other
    runtime). One option for `evaluate` and `check`, so a method author can check the
    start path a run will use."""

    @functools.wraps(command)
    def wrapper(*args: object, **kwargs: object) -> object:
        mode = kwargs["start_mode"]
        if mode == "snapshot" and kwargs.get("system") is None and kwargs.get("command") is None:
            raise click.UsageError("--start snapshot: only for --system or --command")
        if mode == "template" and kwargs.get("system") is None:
            raise click.UsageError("--start template: only for --system (a sandboxed process)")
        return command(*args, **kwargs)

    return click.option(
        "--start",
        "start_mode",
        type=click.Choice(["fresh", "template", "snapshot"]),
        default="fresh",
        show_default=True,
        help="How each sandboxed --system (or, for snapshot, --command) start begins: fresh (a"
        " new bubblewrap box and interpreter), template (opt-in: a fork of one pre-"
        "imported template process per run in which no system code runs, given its own "
        "namespaces, /proc, /tmp, /dev/shm, socket directory, no capabilities and the "
        "same seccomp filter before the system loads) or snapshot (opt-in, as root with "
        "runsc: every start restores one snapshot taken at the system's loaded point, "
        "inside gVisor, an application kernel of its own; no spares). Recorded in the "
        "manifest and stated in every report.",
    )(wrapper)


def process_options(command: Callable[..., object]) -> Callable[..., object]:
    """`--no-sandbox`, and `--env` for a `--system` process; call `command(..., sandbox=bool,
    process_env=(...))`. Goes above `container_options`: `--env` is one option shared with
    `--image`, handed to the process instead when there is no image."""

    @functools.wraps(command)
    def wrapper(*args: object, **kwargs: object) -> object:
        no_sandbox = kwargs.pop("no_sandbox")
        sandbox_net = kwargs.pop("sandbox_net")
        if no_sandbox and sandbox_net:
            raise click.UsageError("--sandbox-net relaxes the sandbox; --no-sandbox drops it")
        # click's tuple of NAME[=VALUE] strings, handed on as it is.
        process_env: object = ()
        if kwargs.get("image") is None:
            process_env, kwargs["container_env"] = kwargs["container_env"], ()
        elif no_sandbox:
            raise click.UsageError("--no-sandbox: only for --system (a process)")
        return command(
            *args,
            sandbox=not no_sandbox,
            sandbox_net=sandbox_net,
            process_env=process_env,
            **kwargs,
        )

    wrapper = click.option(
        "--sandbox-net",
        is_flag=True,
        help="Keep the sandbox but share the host's network (for a system that calls a "
        "model endpoint); recorded in the manifest and printed in every report.",
    )(wrapper)
    wrapper = click.option(
        "--no-sandbox",
        is_flag=True,
        help="Run the --system process unconfined (no bubblewrap sandbox): it sees the "
        "harness's files and environment; recorded in the manifest, and every report says "
        "'unconfined: numbers not comparable'. Sandboxed, the process gets only the "
        "variables --env gives it and its APMBENCH_VLM_* settings.",
    )(wrapper)
    # `--env` is declared with the container options, whose wording knows only containers;
    # it is worded here, where both of its uses meet, so every command says one thing.
    for param in getattr(wrapper, "__click_params__", []):
        if param.name == "container_env":
            param.help = ENV_HELP
    return wrapper


ENV_HELP = (
    "NAME=VALUE: a variable for the system's environment (repeatable; the names are "
    "recorded in the manifest). For a --system or --command process NAME alone passes on "
    "this shell's value; an --image container takes NAME=VALUE only."
)
"""The one wording of `--env`: what `runtimes.sandbox.parse_env` (a process) and
`ContainerSettings.parse_env` (a container) accept."""

SANDBOX_SECTION = (
    "Sandbox",
    "a --system or --command process",
    ("--no-sandbox", "--sandbox-net"),
)


def container_section() -> tuple[str, str, tuple[str, ...]]:
    """The help's section of the container options (all but --image and --env, which
    name what runs and are in its System section)."""
    from apmbench.harness.runtimes.docker.cli_options import OPTION_DEFAULTS

    return (
        "Container",
        "an --image system's hardened container (docs/containers.md)",
        tuple(name for name in OPTION_DEFAULTS if name != "container_env"),
    )


def checked_benchmark(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--benchmark`'s callback: a name the suite registry knows (a built-in or an installed
    plugin's), refused with the closest names otherwise. Not a click.Choice: the choices
    would read every installed distribution's entry points on each command's start."""
    from apmbench.harness.errors import ConfigError
    from apmbench.harness.suites import SUITE_REGISTRY

    if value is None:
        return None
    try:
        SUITE_REGISTRY.entry(value)
    except ConfigError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from e
    return value
