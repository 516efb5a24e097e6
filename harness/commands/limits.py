"""Deadlines and resource caps as command-line options, shared by `evaluate` and `check`.

Every deadline of the protocol client and every cap on what a system may make
the harness store is a flag; a timeout or a cap that is hit names its flag in
the error, and the manifest records the values applied.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.run.executor import DEFAULT_MAX_STATE_BYTES, DEFAULT_MAX_WORK_BYTES
from apmbench.harness.runtimes.docker.settings import parse_size
from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES

CAP_OPTIONS = ("--max-state-size", "--max-work-size", "--max-log-size")
"""What `cap_options` adds, for the help's sections."""
DEADLINE_OPTIONS = tuple(f for name, f in Deadlines.FLAGS.items() if name != "query")
"""What `deadline_options` adds (each command keeps its own --query-timeout)."""


@dataclass(frozen=True)
class Caps:
    max_state_bytes: int | None = DEFAULT_MAX_STATE_BYTES
    max_work_bytes: int | None = DEFAULT_MAX_WORK_BYTES
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES


def _gib(n: int) -> str:
    return f"{n >> 30}g" if n % (1 << 30) == 0 else f"{n >> 20}m"


def deadline_options(
    defaults: Deadlines,
) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """`--control-timeout`, `--push-timeout`, `--state-timeout`, `--end-session-timeout`
    (the command keeps its own `--query-timeout`); the command gets `deadlines=Deadlines`
    with its `query_timeout` in it."""

    def decorate(command: Callable[..., object]) -> Callable[..., object]:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> object:
            values = {
                "control": kwargs.pop("control_timeout"),
                "push": kwargs.pop("push_timeout"),
                "state": kwargs.pop("state_timeout"),
                "end_session": kwargs.pop("end_session_timeout"),
                "query": kwargs["query_timeout"],
            }
            for name, seconds in values.items():
                if seconds <= 0:
                    raise click.BadParameter("must be positive", param_hint=Deadlines.FLAGS[name])
            return command(*args, deadlines=Deadlines(**values), **kwargs)

        what = {
            "control": "Describe, Reset, StartSession and health checks",
            "push": "each PushFrames call",
            "state": "each ExportState and ImportState",
            "end_session": "EndSession",
        }
        decorated: Callable[..., object] = wrapper
        for name in ("end_session", "state", "push", "control"):
            decorated = click.option(
                Deadlines.FLAGS[name],
                type=float,
                default=getattr(defaults, name),
                show_default=True,
                help=f"Seconds allowed for {what[name]}.",
            )(decorated)
        return decorated

    return decorate


def cap_options(command: Callable[..., object]) -> Callable[..., object]:
    """`--max-state-size`, `--max-work-size`, `--max-log-size`; the command gets `caps=Caps`."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> object:
        try:
            caps = Caps(
                parse_size(kwargs.pop("max_state_size"), "--max-state-size"),
                parse_size(kwargs.pop("max_work_size"), "--max-work-size"),
                parse_size(kwargs.pop("max_log_size"), "--max-log-size"),
            )
        except ConfigError as e:
            raise click.UsageError(str(e)) from e
        return command(*args, caps=caps, **kwargs)

    options = [
        click.option(
            "--max-state-size",
            default=_gib(DEFAULT_MAX_STATE_BYTES),
            show_default=True,
            help="Exported state per snapshot at most (e.g. 512m, 8g, or 'none'); a bigger "
            "export stops the run, naming this option.",
        ),
        click.option(
            "--max-work-size",
            default=_gib(DEFAULT_MAX_WORK_BYTES),
            show_default=True,
            help="State snapshots kept on disk at once at most (RUN/work; a snapshot is "
            "deleted as soon as no pending fork needs it), or 'none'.",
        ),
        click.option(
            "--max-log-size",
            default=_gib(DEFAULT_MAX_LOG_BYTES),
            show_default=True,
            help="The system's output kept per start in RUN/logs/system.log; the rest is "
            "dropped with a notice ('none': keep all).",
        ),
    ]
    decorated: Callable[..., object] = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated
