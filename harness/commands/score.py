"""`apmbench-grpc score RUN_DIR`: re-score a finished run without running the system again."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import EXIT_USAGE, console
from apmbench.harness.commands.help_format import command, sections
from apmbench.harness.commands.judge_options import (
    AUTO,
    EXIT_JUDGE_UNREACHABLE,
    JUDGE_SECTION,
    has_reference_judge,
    judge_config,
    judge_options,
    judge_unreachable,
    judge_warnings,
    resolve_auto,
)
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import ConfigError, DatasetError, RunDirError
from apmbench.harness.suites import base, withheld


@command()
@sections(
    ("Data", "where the run's dataset or labels are", ("--dataset", "--labels")),
    JUDGE_SECTION,
    ("Output", "", ("--out",)),
)
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--dataset",
    type=click.Path(path_type=Path),
    default=None,
    help="The run's dataset, when it is no longer where the manifest says. "
    "Its hash must match the run's.",
)
@click.option(
    "--labels",
    type=click.Path(path_type=Path),
    default=None,
    help="The private part of `apmbench-grpc split`: RUN_DIR is then the predictions.json of "
    "a run on its public part (or that run's directory), scored into --out.",
)
@click.option(
    "--out",
    type=OutputPath(),
    default=None,
    help="With --labels: the new run directory to score into.",
)
@judge_options(default_judge=None)
def score(
    run_dir: Path, dataset: Path | None, labels: Path | None, out: Path | None, **judge: Any
) -> None:
    """Re-grade RUN_DIR's raw outputs, judge what its suite has judged and rewrite its report
    (report.json, report.md, report.html).

    Examples:

        apmbench-grpc score runs/demo/text-log --judge synthetic
        apmbench-grpc score predictions.json --labels PRIVATE --out runs/scored

    Judge replies are cached (judge-cache/ in the run directory), so scoring
    again with the same judge makes no new calls and gives the same numbers.

    With --labels PRIVATE: score the predictions a run on a public part wrote, with the
    labels kept elsewhere; predictions made on another public part are refused.
    """
    if labels is not None or out is not None:
        _score_blind(run_dir, labels, out, dataset, judge)
        return
    from apmbench.harness.orchestrate.scoring import (
        dataset_for_run,
        recorded_judge,
        score_run,
        suite_of_run,
    )
    from apmbench.harness.run import records
    from apmbench.harness.run.manifest import load as load_manifest
    from apmbench.harness.scoring.judge import open_judge

    judge_optional = bool(judge.pop("judge_optional", False))
    manifest_path = run_dir / "manifest.json"
    try:
        if not manifest_path.is_file():
            raise RunDirError(f"{run_dir} is not an apmbench run directory (no manifest.json)")
        manifest = load_manifest(manifest_path)
        suite = suite_of_run(manifest)
        data = dataset_for_run(suite, manifest, dataset)
        if withheld.is_public(data.root):
            raise ConfigError(
                f"{run_dir} ran on a public part, whose labels are withheld: score its "
                "predictions.json with --labels PRIVATE --out DIR where the labels are"
            )
        judge["judge"] = resolve_auto(judge["judge"], lambda: has_reference_judge(suite, data.root))
        config = judge_config(recorded_judge(manifest), **judge)
        backend = open_judge(config, lambda: base.reference_judge(suite, data.root))
        try:
            report = score_run(records.RunDir(run_dir), suite, data, config, backend)
        finally:
            if backend is not None:
                backend.close()
    except (DatasetError, ConfigError, RunDirError) as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    from apmbench.harness.orchestrate.html.view import VIEW_NAME, ViewOptions, write_view

    try:
        write_view([run_dir], run_dir / VIEW_NAME, ViewOptions(dataset=dataset))
    except (DatasetError, RunDirError) as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    click.echo(shown.plain((run_dir / "report.md").read_text()))
    unreachable = judge_unreachable(report)
    for warning in judge_warnings(report):
        if unreachable is None or judge_optional or "could not be reached" not in warning:
            console.print(f"[yellow]warning:[/yellow] {shown.markup(warning)}")
    if unreachable is not None and not judge_optional:
        console.print(f"[red]error:[/red] {shown.markup(unreachable)}")
        sys.exit(EXIT_JUDGE_UNREACHABLE)


def _score_blind(
    predictions: Path,
    labels: Path | None,
    out: Path | None,
    dataset: Path | None,
    judge: dict[str, Any],
) -> None:
    from apmbench.harness.orchestrate.blind import score_predictions
    from apmbench.harness.scoring.judge import open_judge

    if labels is None or out is None:
        raise click.UsageError("blind scoring needs both --labels PRIVATE and --out DIR")
    if dataset is not None:
        raise click.UsageError("--dataset is for re-scoring a run directory; drop it with --labels")
    judge_optional = bool(judge.pop("judge_optional", False))
    # Nothing was recorded to keep: as `evaluate`, auto picks the reference judge for the
    # built-in synthetic benchmark's labels (its adaptive scores are otherwise n/c).
    judge["judge"] = resolve_auto(
        AUTO if judge["judge"] is None else judge["judge"],
        lambda: _labels_have_reference_judge(labels),
    )
    config = judge_config(None, **judge)
    try:
        report = score_predictions(
            predictions,
            labels,
            out,
            config,
            lambda suite, data: open_judge(config, lambda: base.reference_judge(suite, data.root)),
        )
    except (DatasetError, ConfigError, RunDirError) as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    click.echo(shown.plain((out / "report.md").read_text()))
    unreachable = judge_unreachable(report)
    for warning in judge_warnings(report):
        if unreachable is None or judge_optional or "could not be reached" not in warning:
            console.print(f"[yellow]warning:[/yellow] {shown.markup(warning)}")
    if unreachable is not None and not judge_optional:
        console.print(f"[red]error:[/red] {shown.markup(unreachable)}")
        sys.exit(EXIT_JUDGE_UNREACHABLE)


def _labels_have_reference_judge(labels: Path) -> bool:
    """Whether the private part's suite has a reference judge for it (a bad private part
    is refused later, by the scoring, with its own message)."""
    from apmbench.harness.orchestrate.blind import read_labels
    from apmbench.harness.suites import get_suite

    try:
        suite = get_suite(str(read_labels(labels)["benchmark"]))
    except (ConfigError, DatasetError, KeyError):
        return False
    return has_reference_judge(suite, labels)
