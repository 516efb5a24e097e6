"""`apmbench-grpc serve`: run a memory system as a gRPC server."""

from __future__ import annotations

import sys

import click

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.harness import logs, shown
from apmbench.harness.commands.common import EXIT_USAGE, console
from apmbench.harness.commands.help_format import command


@command()
@click.argument("system")
@click.option(
    "--address", required=True, help='"unix:/path/to.sock" or "host:port" (port 0 = any).'
)
@click.option(
    "--exit-with-parent",
    is_flag=True,
    help="Stop when the process that started this one dies (used by the harness).",
)
def serve(system: str, address: str, exit_with_parent: bool) -> None:
    """Serve SYSTEM (a registered name such as `null`, or "package.module:Class").

    Example:

        apmbench-grpc serve text-log --address unix:/tmp/text-log.sock
    """
    from apmbench.adapters.sdk.server import serve as run_server
    from apmbench.adapters.systems import load_system

    log = logs.get("serve")
    try:
        instance = load_system(system)
        run_server(
            instance,
            address,
            on_ready=lambda a: log.info("serving", system=system, address=a),
            exit_with_parent=exit_with_parent,
        )
    except ApmbenchError as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
