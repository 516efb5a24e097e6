"""The `apmbench-grpc` command line: the group, and one module per command."""

from __future__ import annotations

import click

from apmbench.harness import logs
from apmbench.harness.commands.check import check
from apmbench.harness.commands.compare import compare
from apmbench.harness.commands.evaluate import evaluate
from apmbench.harness.commands.merge import merge
from apmbench.harness.commands.score import score
from apmbench.harness.commands.serve import serve
from apmbench.harness.commands.synth import synth
from apmbench.harness.commands.view import view


@click.group()
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
@click.option("--json-logs", is_flag=True, help="Log as JSON lines.")
@click.version_option(package_name="apmbench-grpc")
def main(verbose: bool, json_logs: bool) -> None:
    """Evaluate memory systems for streaming egocentric video assistants (APM-Bench)."""
    logs.configure(verbose, json_logs)


main.add_command(serve)
main.add_command(evaluate)
main.add_command(score)
main.add_command(compare)
main.add_command(synth)
main.add_command(check)
main.add_command(view)
main.add_command(merge)

if __name__ == "__main__":
    main()
