"""`apmbench-grpc merge RUN_DIR... --out DIR`: one run directory from the parts of a run."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apmbench.harness.commands.common import EXIT_USAGE, console
from apmbench.harness.commands.help_format import command
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import ConfigError, DatasetError, RunDirError


@command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=OutputPath(),
    required=True,
    help="The merged run directory (new or empty).",
)
@click.option(
    "--dataset",
    type=click.Path(path_type=Path),
    default=None,
    help="The run's dataset, when it is not where the parts' manifests say (same hash).",
)
def merge(run_dirs: tuple[Path, ...], out: Path, dataset: Path | None) -> None:
    """Merge the shards in RUN_DIR... (`evaluate --shard i/N` outputs; a directory may hold
    several) into one run directory, scored as a single-machine run of the same work is.

    Example:

        apmbench-grpc merge runs/part-0 runs/part-1 --out runs/merged

    Refuses parts of different runs (dataset, system, settings, versions), naming the
    difference, and a set of parts that misses a trajectory or records one twice.
    """
    from apmbench.harness.orchestrate.merge import merge as merge_parts

    try:
        merge_parts(list(run_dirs), out, dataset)
    except (DatasetError, ConfigError, RunDirError) as e:
        console.print(f"[red]error:[/red] {e}")
        sys.exit(EXIT_USAGE)
    if (out / "predictions.json").is_file():  # parts of a run on a public part
        click.echo(f"labels withheld: predictions written to {out / 'predictions.json'}")
    else:
        click.echo((out / "report.md").read_text())
    click.echo(f"run directory: {out}")
