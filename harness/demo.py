"""`make demo`: `apmbench-grpc evaluate` with no system, into a new run directory each time.

A demo never replaces an earlier one: each writes `runs/demo-<UTC time>/`, and
`runs/demo` is a symbolic link to the latest, made as it starts (so its
progress can be looked at while it runs). Earlier demos stay until you delete
them. A real directory at `runs/demo` (what demos wrote before they had
their own directories) is never touched: the link is then not made, and a
line says so.

Around the run it prints what `evaluate` cannot: where the demo goes and the
total time at the end. `evaluate` itself logs each phase (the synthetic
benchmark's generation, each system as it starts and finishes, the systems
the comparison leaves out and why).

    python -m apmbench.harness.demo [--runs DIR] [EVALUATE OPTION...]
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Sequence
from pathlib import Path

import click

LATEST = "demo"
"""The link in the runs folder that names the latest demo."""


def new_demo_dir(runs: Path, now: dt.datetime) -> Path:
    """A run directory no earlier demo has: `demo-<UTC time to the second>`, with `-2`,
    `-3`, ... for demos started within one second. Created here, so a second demo
    starting at once cannot take it too."""
    stem = f"{LATEST}-{now.astimezone(dt.UTC):%Y%m%d-%H%M%S}"
    runs.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = runs / (stem if n == 1 else f"{stem}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise click.ClickException(f"{runs} already holds 999 demos started in one second")


def point_latest(runs: Path, target: Path) -> str:
    """Make `runs/demo` a link to `target`; say what happened, in one line for the user.
    A link is replaced (through a temporary link and a rename, so it always names a
    demo); anything else at that path is left as it is."""
    link = runs / LATEST
    if link.exists() and not link.is_symlink():
        return (
            f"{link} is an earlier demo's directory, left as it is (delete it yourself if "
            f"you no longer need it); this demo is in {target}"
        )
    _link(runs, target.name)
    return f"{link} -> {target.name} (earlier demos are kept beside it)"


def _link(runs: Path, name: str) -> None:
    """Point `runs/demo` at `name`: a new link renamed over the old, so it is never missing."""
    temporary = runs / f".{LATEST}.{os.getpid()}.link"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(name)
    temporary.replace(runs / LATEST)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


@click.command(context_settings={"ignore_unknown_options": True})
@click.option(
    "--runs",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("runs"),
    show_default=True,
    help="Folder of the demos' run directories.",
)
@click.argument("evaluate_options", nargs=-1, type=click.UNPROCESSED)
def demo(runs: Path, evaluate_options: Sequence[str]) -> None:
    """Run the demo (the built-in benchmark, every reference system, a comparison)."""
    from apmbench.harness.cli import main

    out = new_demo_dir(runs, dt.datetime.now(dt.UTC))
    link = runs / LATEST
    previous = os.readlink(link) if link.is_symlink() else None
    click.echo(f"demo: writing to {out}; {point_latest(runs, out)}", err=True)
    began = time.monotonic()
    code: int | str | None = 0
    try:
        main.main(
            ["evaluate", "--out", str(out), *evaluate_options],
            prog_name="apmbench-grpc",
            standalone_mode=True,
        )
    except SystemExit as e:
        code = e.code
    took = _minutes(time.monotonic() - began)
    if not any(out.iterdir()):  # refused before it wrote anything: leave no empty demo behind
        out.rmdir()
        if link.is_symlink() and os.readlink(link) == out.name:
            if previous is None:
                link.unlink()
            else:
                _link(runs, previous)
    if code in (0, None):
        click.echo(f"demo: finished in {took}; open {out / 'compare.html'}", err=True)
    else:
        click.echo(f"demo: stopped after {took} with exit code {code}; see above", err=True)
    raise SystemExit(code)


if __name__ == "__main__":
    demo()
