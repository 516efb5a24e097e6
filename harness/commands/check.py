"""`apmbench-grpc check`: run the conformance suite against a server and report each check."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import (
    EXIT_FAILED_CHECKS,
    EXIT_USAGE,
    SANDBOX_SECTION,
    container_section,
    interrupted_exit,
    process_options,
    start_option,
    stop_signals_interrupt,
)
from apmbench.harness.commands.common import console as err_console
from apmbench.harness.commands.help_format import command, sections
from apmbench.harness.commands.limits import DEADLINE_OPTIONS, deadline_options
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.docker.cli_options import container_options
from apmbench.harness.runtimes.docker.settings import ContainerSettings

# Shorter than a run's: conformance systems are small, and a hang should fail its check soon.
CHECK_DEADLINES = Deadlines(control=30.0, push=120.0, query=60.0, state=600.0)

if TYPE_CHECKING:  # imported lazily below, so `apmbench-grpc --help` stays fast
    from rich.text import Text

    from apmbench.harness.check.model import Check, CheckReport
    from apmbench.harness.runtimes import RuntimeSpec


@command()
@sections(
    (
        "System",
        "the server to check: one of these",
        ("--system", "--command", "--endpoint", "--image", "--env"),
    ),
    ("Checks", "which checks run", ("--only", "--skip", "--quick", "--list")),
    ("Starts", "how a --system process starts", ("--start",)),
    SANDBOX_SECTION,
    container_section(),
    (
        "Deadlines",
        "how long each call may take",
        ("--query-timeout", "--startup-timeout", *DEADLINE_OPTIONS),
    ),
    ("Output", "where the report goes", ("--out", "--json")),
)
@click.option("--system", "system", help="Registered system or module:Class, run as a process.")
@click.option("--endpoint", help="Address of a running server (unix:/path or host:port).")
@click.option(
    "--command",
    "command",
    help="Any server command line with {address} in it, e.g. 'node server.js {address}': "
    "started (and restarted) as a sandboxed local process from the current directory; "
    "{address} becomes unix:/path/to/sock.",
)
@click.option("--only", multiple=True, help="Run only this check (repeatable; see --list).")
@click.option("--skip", multiple=True, help="Do not run this check (repeatable).")
@click.option(
    "--quick", is_flag=True, help="Skip the slow checks (restart persistence, >64 MiB state)."
)
@click.option("--list", "list_checks", is_flag=True, help="List the checks and their rules.")
@click.option(
    "--out",
    type=OutputPath(),
    default=None,
    help="Where check.json and the server's log go. Default: runs/check-<target>.",
)
@click.option(
    "--json",
    "json_path",
    type=OutputPath(directory=False, dash=True),
    default=None,
    help="Also write the JSON report to this path ('-' prints it instead of the table).",
)
@click.option(
    "--query-timeout", type=float, default=60.0, show_default=True, help="Seconds per Query."
)
@click.option(
    "--startup-timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds for the server to report SERVING.",
)
@deadline_options(CHECK_DEADLINES)
@start_option
@process_options
@container_options
def check(
    system: str | None,
    endpoint: str | None,
    command: str | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    quick: bool,
    list_checks: bool,
    out: Path | None,
    json_path: Path | None,
    query_timeout: float,
    startup_timeout: float,
    image: str | None,
    container: ContainerSettings,
    sandbox: bool,
    sandbox_net: bool,
    process_env: tuple[str, ...],
    deadlines: Deadlines,
    start_mode: str,
) -> None:
    """Check that a server follows the protocol: each check passes, fails or does not apply.

    Examples:

        apmbench-grpc check --system server:MyMemory
        apmbench-grpc check --image my-method:dev --quick

    Exit code 0 when no check failed, 1 when one did, 2 for bad options.
    """
    from apmbench.harness.check import CHECKS, select
    from apmbench.harness.check.render import to_json

    if list_checks:
        for c in CHECKS:
            slow = " (slow)" if c.slow else ""
            click.echo(f"{c.name:28} {c.rule.label():44} since {c.since}  {c.summary}{slow}")
        return
    if sum(x is not None for x in (system, endpoint, image, command)) != 1:
        raise click.UsageError(
            "give one of --system NAME, --command 'CMD {address}', --endpoint ADDRESS, "
            "--image IMAGE"
        )
    try:
        checks = select(only, skip, quick)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    try:
        spec = runtime_spec(
            system=system,
            endpoint=endpoint,
            image=image,
            command=command,
            container=container,
            sandbox=sandbox,
            sandbox_net=sandbox_net,
            env=process_env,
            start=start_mode,
        )
        out = out or Path("runs") / f"check-{spec.label}"
        with stop_signals_interrupt():
            report = _run(spec, checks, out, deadlines, startup_timeout)
    except ConfigError as e:
        err_console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt as e:
        code, what = interrupted_exit(e)
        err_console.print(what)
        sys.exit(code)
    text = to_json(report)
    (out / "check.json").write_text(text)
    if json_path is not None and str(json_path) == "-":
        click.echo(text, nl=False)
    else:
        if json_path is not None:
            Path(json_path).write_text(text)
        _print(report)
        click.echo(f"report: {out / 'check.json'}; server log: {out / 'logs' / 'system.log'}")
    if not report.ok:
        sys.exit(EXIT_FAILED_CHECKS)


def _print(report: CheckReport) -> None:
    from rich.console import Console

    from apmbench.harness.check.render import failures, table

    rendered = table(report)
    probe = Console(width=140, color_system=None, force_terminal=False)
    with probe.capture() as capture:
        probe.print(rendered)
    text = capture.get()
    if shown.plain(text) == text:
        Console(width=140).print(rendered)
    else:
        # A system's text in a cell carries control sequences: shown without them (and colour).
        click.echo(shown.plain(text), nl=False)
    for line in failures(report):
        click.echo(shown.plain(line))


def _safe_line(line: Text) -> Text:
    """A result line without a system's control sequences (its colours kept when it had none)."""
    from rich.text import Text

    clean = shown.plain(line.plain)
    return line if clean == line.plain else Text(clean)


def _run(
    spec: RuntimeSpec,
    checks: list[Check],
    out: Path,
    deadlines: Deadlines,
    startup_timeout: float,
    sandbox: bool = True,
    process_env: tuple[str, ...] = (),
) -> CheckReport:
    from apmbench.harness.check import CheckSettings, run_suite
    from apmbench.harness.check.render import result_line
    from apmbench.harness.runtimes import make_runtime

    out.mkdir(parents=True, exist_ok=True)
    runtime = make_runtime(spec, out, deadlines, startup_timeout)
    with runtime:
        return run_suite(
            runtime,
            checks,
            CheckSettings(query_timeout_s=deadlines.query),
            on_result=lambda r: err_console.print(_safe_line(result_line(r))),
        )
