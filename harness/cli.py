"""The `apmbench-grpc` command line: the group, and one module per command."""

from __future__ import annotations

import signal

import click

from apmbench.harness import logs
from apmbench.harness.commands.bundle import bundle
from apmbench.harness.commands.check import check
from apmbench.harness.commands.compare import compare
from apmbench.harness.commands.evaluate import evaluate
from apmbench.harness.commands.help_format import Group
from apmbench.harness.commands.leaderboard import leaderboard
from apmbench.harness.commands.merge import merge
from apmbench.harness.commands.score import score
from apmbench.harness.commands.serve import serve
from apmbench.harness.commands.split import split
from apmbench.harness.commands.synth import synth
from apmbench.harness.commands.systems import systems
from apmbench.harness.commands.verify import verify
from apmbench.harness.commands.view import view


@click.group(cls=Group)
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
@click.option("--json-logs", is_flag=True, help="Log as JSON lines.")
@click.version_option(package_name="apmbench-grpc")
def main(verbose: bool, json_logs: bool) -> None:
    """Evaluate memory systems for streaming egocentric video assistants (APM-Bench).

    Examples:

        apmbench-grpc evaluate --synthetic tiny --system text-log
        apmbench-grpc check --system my_module:MyMemory
        apmbench-grpc COMMAND --help
    """
    logs.configure(verbose, json_logs)


main.add_command(serve)
main.add_command(evaluate)
main.add_command(score)
main.add_command(compare)
main.add_command(synth)
main.add_command(check)
main.add_command(view)
main.add_command(merge)
main.add_command(systems)
main.add_command(split)
main.add_command(leaderboard)
main.add_command(bundle)
main.add_command(verify)


def run() -> None:
    """The console script. Once the command is over (its systems removed, its records
    written) the interpreter is only exiting: a stop signal then would turn a finished
    run's exit code into a bare death by signal, so it is ignored. SIG_IGN, not a Python
    handler: the interpreter resets Python handlers to the default while it finalizes,
    which is the very window (module teardown can take a while) a scheduler's SIGTERM
    lands in; an ignored signal stays ignored. Nothing starts a process after this point,
    so no child inherits it (in-process callers use `main`, whose wrapper installs a
    Python handler instead)."""
    try:
        main()
    finally:
        for s in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)


if __name__ == "__main__":
    run()
