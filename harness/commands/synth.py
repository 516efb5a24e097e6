"""`apmbench-grpc synth`: write a synthetic benchmark to a directory."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import EXIT_USAGE, checked_benchmark, console
from apmbench.harness.commands.help_format import command
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import ConfigError
from apmbench.harness.suites import BUILTIN, DEFAULT, get_suite


@command()
@click.option(
    "--benchmark",
    callback=checked_benchmark,
    default=DEFAULT,
    show_default=True,
    help=f"Whose synthetic benchmark: {', '.join(BUILTIN)}, or one an installed plugin registers.",
)
@click.option("--preset", default="small", show_default=True, help="tiny, small or paper.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", type=OutputPath(), required=True, help="New dataset directory.")
def synth(benchmark: str, preset: str, seed: int, out: Path) -> None:
    """Generate the synthetic benchmark (videos and annotations) for PRESET and SEED.

    Example:

        apmbench-grpc synth --preset tiny --seed 7 --out runs/tiny-7
    """
    if out.exists() and any(out.iterdir()):
        console.print(f"[red]error:[/red] {out} exists and is not empty: choose a new --out")
        sys.exit(EXIT_USAGE)
    try:
        counts = get_suite(benchmark).write_synthetic(preset, seed, out)
    except ConfigError as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    # Each suite counts what its dataset holds (APM-Bench: candidates per task; ProactEgoMem:
    # clips, events, questions), so the line names them rather than summing them.
    console.print(f"wrote {out}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
