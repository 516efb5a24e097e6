"""`apmbench-grpc synth`: write a synthetic benchmark to a directory."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apmbench.harness.commands.common import EXIT_USAGE, console
from apmbench.harness.suites.apmbench.synth.presets import PRESETS


@click.command()
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default="small", show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--out", type=click.Path(path_type=Path), required=True, help="New dataset directory."
)
def synth(preset: str, seed: int, out: Path) -> None:
    """Generate the synthetic benchmark (videos and candidates) for PRESET and SEED."""
    from apmbench.harness.suites.apmbench.synth.writer import build

    if out.exists() and any(out.iterdir()):
        console.print(f"[red]error:[/red] {out} exists and is not empty: choose a new --out")
        sys.exit(EXIT_USAGE)
    counts = build(PRESETS[preset], seed, out)
    total = sum(counts.values())
    console.print(
        f"wrote {total} candidates to {out}: " + ", ".join(f"{t} {n}" for t, n in counts.items())
    )
