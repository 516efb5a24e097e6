"""`apmbench-grpc verify BUNDLE`: check a bundle before trusting its numbers, and print
the compliance table: each rule pass, fail or not applicable, and why."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import EXIT_FAILED_CHECKS, EXIT_USAGE, console
from apmbench.harness.commands.help_format import command, sections
from apmbench.harness.commands.judge_options import JUDGE_SECTION, judge_config, judge_options
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import ConfigError, DatasetError, RunDirError

if TYPE_CHECKING:  # imported lazily below, so `apmbench-grpc --help` stays fast
    from rich.table import Table

    from apmbench.harness.orchestrate.bundle import Verification
    from apmbench.harness.scoring.judge import JudgeConfig

PROBLEMS_IN_TABLE = 5
"""Problems a failed rule shows in the table; all of them follow it, one per line."""


@command()
@sections(
    ("Data", "the labels and dataset to check against", ("--labels", "--dataset")),
    JUDGE_SECTION,
    ("Output", "", ("--json",)),
)
@click.argument("bundle_path", metavar="BUNDLE", type=click.Path(path_type=Path))
@click.option(
    "--labels",
    type=click.Path(path_type=Path),
    default=None,
    help="The private part of `apmbench-grpc split`: score a blind bundle's predictions "
    "with it and show the headline numbers.",
)
@click.option(
    "--dataset",
    type=click.Path(path_type=Path),
    default=None,
    help="The run's dataset, when it is not where the manifest says (a synthetic one is "
    "generated again from its preset and seed). Its hash must be the run's.",
)
@click.option(
    "--json",
    "json_path",
    type=OutputPath(directory=False, dash=True),
    default=None,
    help="Also write the verification as JSON to this path ('-' prints it instead of the table).",
)
@judge_options(default_judge=None)
def verify(
    bundle_path: Path,
    labels: Path | None,
    dataset: Path | None,
    json_path: Path | None,
    **judge: Any,
) -> None:
    """Check BUNDLE (from `apmbench-grpc bundle`): its index and every member's hash, a blind
    run's seal, every number of report.json re-derived from the records (with a fresh judge
    cache; the recorded judge when it is the deterministic synthetic one, an LLM judge
    only with --judge), the labels' score of a blind run (--labels), and the plausibility of
    every recorded time.

    Examples:

        apmbench-grpc verify inbox/sub.apmbundle.tar
        apmbench-grpc verify inbox/sub.apmbundle.tar --labels private --judge synthetic

    Exit code 0 when no rule failed, 1 when one did, 2 when BUNDLE cannot be read.
    """
    from apmbench.harness.orchestrate.blind import read_labels
    from apmbench.harness.orchestrate.bundle import (
        BundleError,
        RescoreOptions,
        read_bundle,
        verify_bundle,
    )

    given = {k: v for k, v in judge.items() if v is not None}
    if given and "judge" not in given:
        raise click.UsageError(
            "the --judge-* options set up the judge --judge names: give --judge too (without "
            "it, verify uses the run's judge where it is deterministic, and asks no LLM judge)"
        )

    def chosen(recorded: JudgeConfig) -> JudgeConfig:
        return judge_config(recorded, **{"judge": None, **given})

    try:
        bundle = read_bundle(bundle_path)
        if labels is not None:
            read_labels(labels)
        if dataset is not None and not dataset.is_dir():
            raise DatasetError(f"--dataset {dataset} is not a directory")
        options = RescoreOptions(dataset, labels, chosen if given else None)
        verification = verify_bundle(bundle, options)
    except (BundleError, DatasetError, ConfigError, RunDirError) as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    text = verification.to_json()
    if json_path is not None and str(json_path) == "-":
        click.echo(text, nl=False)
    else:
        if json_path is not None:
            Path(json_path).write_text(text)
        _print(verification)
    if not verification.ok:
        sys.exit(EXIT_FAILED_CHECKS)


def table(verification: Verification) -> Table:
    from rich.table import Table
    from rich.text import Text

    from apmbench.harness.orchestrate.bundle import Outcome

    style = {Outcome.PASS: "green", Outcome.FAIL: "bold red", Outcome.NOT_APPLICABLE: "yellow"}
    head = verification.head()
    counts = verification.counts()
    suites = ", ".join(str(s) for s in head["suites"]) if isinstance(head["suites"], list) else ""
    title = (
        f"apmbench-grpc verify: bundle {str(head['id'])[:16]}... ({suites}, {head['system']}, "
        f"dataset {head['dataset']}{', blind' if head['blind'] else ''}): {counts['pass']} "
        f"passed, {counts['fail']} failed, {counts['n/a']} not applicable "
        f"({verification.seconds:.1f} s)"
    )
    out = Table(title=shown.plain(title), show_lines=True, expand=False)
    out.add_column("rule", no_wrap=True)
    out.add_column("result", no_wrap=True)
    out.add_column("what it checks", max_width=30)
    out.add_column("what was seen", ratio=1)
    for r in verification.results:
        said = Text(shown.plain(r.reason))
        for p in r.problems[1:PROBLEMS_IN_TABLE] if r.outcome is Outcome.FAIL else ():
            said.append(f"\n{shown.plain(p)}")
        rule = f"{r.rule}\n({r.run})" if r.run else r.rule
        out.add_row(rule, Text(r.outcome.value, style=style[r.outcome]), r.title, said)
    return out


def _print(verification: Verification) -> None:
    from rich.console import Console

    from apmbench.harness.orchestrate.bundle import Outcome

    Console(width=140).print(table(verification))
    # Each problem on a line of its own, never wrapped: names of files and fields whole.
    for r in verification.results:
        if r.outcome is Outcome.FAIL:
            rule = f"{r.rule} ({r.run})" if r.run else r.rule
            for p in r.problems or (r.reason,):
                click.echo(shown.plain(f"FAIL {rule}: {p}"))
    click.echo(
        shown.plain(
            f"bundle {verification.bundle.id}: "
            + ("every rule passed or does not apply" if verification.ok else "verification FAILED")
        )
    )


def _verify_judge_help() -> None:
    """The shared judge options, as verify reads them: no --judge-optional (verify never
    leaves a judge's numbers out silently), and its own defaults for --judge and its cache."""
    verify.params = [p for p in verify.params if p.name != "judge_optional"]
    for p in verify.params:
        if isinstance(p, click.Option) and p.name == "judge":
            p.help = (
                "The judge to re-derive with: none | openai | transformers:PATH | synthetic. "
                "Default: the run's own where it is deterministic (the synthetic reference "
                "judge, or none); an LLM judge is not asked, and the numbers resting on it "
                "are reported as not re-derived."
            )
        if isinstance(p, click.Option) and p.name == "judge_cache":
            p.help = "Reply cache directory (yours). Default: a fresh, empty one."


_verify_judge_help()
