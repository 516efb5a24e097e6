"""`apmbench-grpc view RUN_DIR...`: one self-contained HTML file to look at runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apmbench.harness.commands.common import EXIT_USAGE, console
from apmbench.harness.commands.help_format import command
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import DatasetError, RunDirError


@command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=OutputPath(directory=False),
    default=None,
    help="The HTML file. Default: RUN_DIR/report.html for one run, "
    "runs/compare/compare.html for several.",
)
@click.option(
    "--dataset",
    type=click.Path(path_type=Path),
    default=None,
    help="The runs' dataset, when it is no longer where the manifests say (for prompts and "
    "frames). Its hash must match the runs'.",
)
@click.option(
    "--no-frames", is_flag=True, help="Leave out the frame thumbnails (no video decoding)."
)
@click.option(
    "--max-thumbnail-queries",
    type=int,
    default=None,
    help="Leave out the thumbnails when the runs hold more queries than this. Default: 5000.",
)
def view(
    run_dirs: tuple[Path, ...],
    out: Path | None,
    dataset: Path | None,
    no_frames: bool,
    max_thumbnail_queries: int | None,
) -> None:
    """Write the report of RUN_DIR... as one HTML file: tables, plots, every query.

    Example:

        apmbench-grpc view runs/demo/text-log runs/demo/frame-archive

    The file needs no server and no network (open it from file://): tables of
    the paper, the utility-latency-storage plot, score bars, latency and
    storage charts, audit findings, the manifests, and each query with its
    prompt, the frames the system had just received, the streamed answer, the
    parse, the gate and the judge's verdict, filterable by task, system and
    outcome.
    """
    from apmbench.harness.orchestrate.html.view import (
        COMPARISON_NAME,
        MAX_THUMBNAIL_QUERIES,
        VIEW_NAME,
        ViewOptions,
        write_view,
    )

    if out is None:
        out = (
            run_dirs[0] / VIEW_NAME
            if len(run_dirs) == 1
            else Path("runs") / "compare" / COMPARISON_NAME
        )
    try:
        options = ViewOptions(
            thumbnails=not no_frames,
            dataset=dataset,
            max_thumbnail_queries=max_thumbnail_queries or MAX_THUMBNAIL_QUERIES,
        )
        write_view(run_dirs, out, options)
    except (RunDirError, DatasetError) as e:
        console.print(f"[red]error:[/red] {e}")
        sys.exit(EXIT_USAGE)
    click.echo(f"report: {out.resolve().as_uri()}")
