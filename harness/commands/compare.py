"""`apmbench-grpc compare RUN_DIR...`: systems side by side, and the Figure 2 plot."""

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
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=OutputPath(),
    default=Path("runs/compare"),
    show_default=True,
    help="Where compare.md, compare.html, compare.json and tradeoff.png go.",
)
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="Compare even when the runs' datasets or scoring settings differ (the notes say how).",
)
def compare(run_dirs: tuple[Path, ...], out: Path, allow_mismatch: bool) -> None:
    """Put the reports of RUN_DIR... side by side and plot utility, latency and storage.

    Example:

        apmbench-grpc compare runs/demo/text-log runs/demo/frame-archive --out runs/cmp
    """
    from apmbench.harness.orchestrate.compare import load_runs, mismatches, write_comparison
    from apmbench.harness.orchestrate.html.view import COMPARISON_NAME, write_html

    try:
        runs = load_runs(run_dirs)
        problems = mismatches(runs)
        if problems and not allow_mismatch:
            raise RunDirError(
                "these runs are not comparable: "
                + "; ".join(problems)
                + ". Pass --allow-mismatch to compare them anyway"
            )
        _, plot = write_comparison(runs, out, problems)
        html = write_html(runs, out / COMPARISON_NAME)
    except RunDirError as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    click.echo(shown.plain((out / "compare.md").read_text()))
    for problem in problems:
        console.print(f"[yellow]warning:[/yellow] compared despite: {shown.markup(problem)}")
    click.echo(f"plot: {plot}\nhtml: {html}")
