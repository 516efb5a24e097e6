"""`apmbench-grpc bundle RUN_DIR --out FILE`: a run directory as one content-addressed,
deterministic archive (harness/orchestrate/bundle/archive.py), for a leaderboard to verify."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import EXIT_USAGE, console
from apmbench.harness.commands.help_format import command
from apmbench.harness.commands.out_paths import OutputPath, problem
from apmbench.harness.errors import RunDirError


class BundlePath(OutputPath):
    """--out: a file to write, or a directory (existing) to write `<id>.apmbundle.tar` in."""

    def __init__(self) -> None:
        super().__init__(directory=False)

    def convert(
        self,
        value: str | os.PathLike[str],
        param: click.Parameter | None,
        ctx: click.Context | None,
    ) -> str | bytes | os.PathLike[str]:
        path = Path(value)
        if path.expanduser().is_dir():
            found = problem(path, directory=True)
            if found is not None:
                self.fail(found, param, ctx)
            return path
        return super().convert(value, param, ctx)


@command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=BundlePath(),
    required=True,
    help="The bundle file to write, or an existing directory to write <id>.apmbundle.tar in.",
)
def bundle(run_dir: Path, out: Path) -> None:
    """Write RUN_DIR (a finished run, a blind run's predictions, or the OUT of `evaluate
    --benchmark all`) as one archive for a leaderboard.

    Examples:

        apmbench-grpc bundle runs/my-run --out submissions/
        apmbench-grpc bundle runs/my-run --out my-run.apmbundle.tar

    The archive holds the manifest, records, predictions, reports, logs (each cut to
    1 MiB) and BUNDLE.json, which lists every member's sha256 and size. Prints the
    bundle's id, the sha256 of its index; the same run gives the same bytes. Leaves
    judge-cache/ out. Check one with `apmbench-grpc verify`.
    """
    from apmbench.harness.orchestrate.bundle import write_bundle
    from apmbench.harness.orchestrate.bundle.archive import LOG_BOUND_BYTES

    try:
        if not run_dir.is_dir():
            raise RunDirError(f"{run_dir} is not a directory: give a run directory")
        root, target = run_dir.resolve(), out.resolve()
        if target == root or root in target.parents:
            raise RunDirError(
                f"--out {out} is inside {run_dir}: the bundle would become part of the run "
                "directory (and of its next bundle); write it elsewhere"
            )
        written = write_bundle(run_dir, out)
    except (RunDirError, OSError) as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    members = written.index.get("members")
    cut = (
        sum(1 for m in members if isinstance(m, dict) and "cut" in m)
        if isinstance(members, list)
        else 0
    )
    said = f"bundle {written.path}: {written.path.stat().st_size:,} bytes"
    said += f", {len(members) if isinstance(members, list) else 0} members"
    if cut:
        said += f", {cut} log{'s' if cut != 1 else ''} cut to {LOG_BOUND_BYTES:,} bytes"
    console.print(shown.markup(said))
    click.echo(written.id)
