"""`apmbench-grpc leaderboard INPUT... --out DIR`: a static site comparing methods on every
suite."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import EXIT_USAGE, console
from apmbench.harness.commands.help_format import command
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import RunDirError


@command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=OutputPath(),
    default=Path("runs/leaderboard"),
    show_default=True,
    help="The site's directory: index.html and leaderboard.json are written there.",
)
@click.option(
    "--labels",
    "labels",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A private part of `apmbench-grpc split` (repeat for several): a bundle of a blind "
    "run scored with it is verified with it (its numbers are re-derived from the labels).",
)
def leaderboard(inputs: tuple[Path, ...], out: Path, labels: tuple[Path, ...]) -> None:
    """Write a static leaderboard of INPUT... (result bundles or run directories).

    Examples:

        apmbench-grpc leaderboard published/*.apmbundle.tar --out site
        apmbench-grpc leaderboard runs/text-log runs/null --out site

    It writes index.html, one self-contained page (no server, no network), and
    leaderboard.json with every number. Bundles are verified as they are read.

    Runs are grouped by suite, dataset and judge, each group ranked on its own with the
    suite's headline tables and its utility-latency-storage plot; every run is its own
    row, each number linked to the run it came from and marked verified, not verified or
    unconfined.
    """
    from apmbench.harness.orchestrate.leaderboard.entries import load_entries
    from apmbench.harness.orchestrate.leaderboard.site import build_leaderboard

    try:
        page, data = build_leaderboard(load_entries(inputs, labels), out)
    except RunDirError as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    click.echo(f"leaderboard: {page.resolve().as_uri()}")
    click.echo(f"data: {data}")
