"""`apmbench-grpc split DATASET --public P --private Q`: keep the labels off the machine that
runs the system."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import EXIT_USAGE, console
from apmbench.harness.commands.help_format import command
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import ConfigError, DatasetError
from apmbench.harness.suites import SUITES


@command()
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option(
    "--public",
    "public",
    type=OutputPath(),
    required=True,
    help="New directory: what a run needs (videos, questions, options, times), no labels.",
)
@click.option(
    "--private",
    "private",
    type=OutputPath(),
    required=True,
    help="New directory: what scoring needs (answers, evidence, references), no videos.",
)
@click.option(
    "--benchmark",
    type=click.Choice(sorted(SUITES)),
    default=None,
    help="The suite. Default: the one the dataset names.",
)
def split(dataset: Path, public: Path, private: Path, benchmark: str | None) -> None:
    """Split DATASET into a public part to evaluate on and a private part to score with.

    Example:

        apmbench-grpc split DATASET --public runs/public --private runs/private

    `evaluate --dataset PUBLIC` then writes predictions.json instead of a report;
    `score predictions.json --labels PRIVATE --out DIR` scores it on the machine that holds
    the labels, and refuses predictions made on another public part.
    """
    from apmbench.harness.orchestrate.blind import split_dataset

    try:
        record = split_dataset(dataset, public, private, benchmark)
    except (DatasetError, ConfigError) as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    click.echo(
        f"public part: {public} (hash {record['public_hash'][:12]}...), give it to the machine "
        f"that runs the system; private part: {private}, keep it where scoring happens"
    )
    from apmbench.harness.orchestrate.blind import known_seed

    known = known_seed(private).get("synthetic")
    if isinstance(known, dict):
        console.print(
            f"[yellow]warning:[/yellow] {dataset} is synthetic from the seed {known['seed']}, "
            "which was given, not drawn: anyone who knows it can rebuild every label with the "
            "public generator, and every run scored with this private part says so. For "
            "numbers to publish, generate with `apmbench-grpc synth` without --seed."
        )
