"""`apmbench-grpc synth`: write a synthetic benchmark to a directory."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import EXIT_USAGE, checked_benchmark, console
from apmbench.harness.commands.help_format import command
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import ConfigError
from apmbench.harness.suites import BUILTIN, DEFAULT, datasets, get_suite

SEED_LIMIT = 2**63
"""Drawn seeds lie below this (as `evaluate --synthetic`'s): too many to try one by one."""


def mark_seed(dataset: Path, drawn: bool) -> None:
    """Record in dataset.json's generator record whether its seed was drawn here. The record
    stays in the private part of a split; a blind run scored with it carries the mark, and
    its report says so when the seed was given (anyone could rebuild the labels)."""
    path = dataset / "dataset.json"
    doc = json.loads(path.read_text())
    generator = doc.get("generator")
    if not isinstance(generator, dict):
        raise ConfigError(f"{path} has no generator record to mark the seed in")
    generator["seed_drawn"] = drawn
    name, seed = doc.get("name"), generator.get("seed")
    if drawn and isinstance(name, str) and name.endswith(f"-{seed}"):
        # The generators name a dataset by its seed; every report prints the dataset's name,
        # and a drawn seed must reach no report (it rebuilds every label).
        doc["name"] = name.removesuffix(f"-{seed}") + "-drawn"
    path.write_text(json.dumps(doc, indent=1) + "\n")


@command()
@click.option(
    "--benchmark",
    callback=checked_benchmark,
    default=DEFAULT,
    show_default=True,
    help=f"Whose synthetic benchmark: {', '.join(BUILTIN)}, or one an installed plugin registers.",
)
@click.option("--preset", default="small", show_default=True, help="tiny, small or paper.")
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Default: drawn at random, so nobody can rebuild the labels from the public "
    "generator; recorded in dataset.json's generator record (split keeps it private). A given "
    "seed is marked known there, and a blind run scored on the dataset says so.",
)
@click.option("--out", type=OutputPath(), required=True, help="New dataset directory.")
def synth(benchmark: str, preset: str, seed: int | None, out: Path) -> None:
    """Generate the synthetic benchmark (videos and annotations) for PRESET and SEED.

    Example:

        apmbench-grpc synth --preset tiny --seed 7 --out runs/tiny-7
    """
    if out.exists() and any(out.iterdir()):
        console.print(f"[red]error:[/red] {out} exists and is not empty: choose a new --out")
        sys.exit(EXIT_USAGE)
    drawn = seed is None
    chosen = secrets.randbelow(SEED_LIMIT) if seed is None else seed
    try:
        counts = datasets.write_synthetic(get_suite(benchmark), preset, chosen, out)
        mark_seed(out, drawn)
    except ConfigError as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    if drawn:
        console.print(f"seed {chosen}, drawn at random: keep it private (split does)")
    else:
        console.print(
            f"[yellow]seed {chosen} given:[/yellow] the generator is public, so anyone who knows "
            "the seed can rebuild every label; publish from a dataset whose seed was drawn "
            "(no --seed). A blind run scored on it says so."
        )
    # Each suite counts what its dataset holds (APM-Bench: candidates per task; ProactEgoMem:
    # clips, events, questions), so the line names them rather than summing them.
    console.print(f"wrote {out}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
