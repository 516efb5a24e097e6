"""`evaluate --benchmark all` (or `--benchmark a,b`): one system on each suite in turn.

Each suite is one ordinary `evaluate` run into OUT/<suite>/ (its own synthetic
benchmark of the given size, its own system processes or containers); a
failure in one suite keeps the others' run directories and the rest still run,
and the command exits with the worst suite's code. Then one page puts the
headlines side by side (orchestrate/multi_suite.py).

What cannot mean the same on every suite is refused before anything starts
(exit 2): a `--dataset` (it is one suite's), no system (the embedded comparison
of every reference system is one suite at a time), `--shard` (a shard is scored
only after `merge`), and an `--fps` or `--synthetic` size a suite does not take.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import click

from apmbench.harness import shown
from apmbench.harness.commands.common import (
    EXIT_SYSTEM,
    EXIT_USAGE,
    checked_benchmark,
    console,
    interrupted_exit,
)
from apmbench.harness.commands.evaluate_command import EvaluateCommand
from apmbench.harness.commands.judge_options import EXIT_JUDGE_UNREACHABLE
from apmbench.harness.errors import ConfigError, RunDirError
from apmbench.harness.orchestrate.settings import SyntheticRequest
from apmbench.harness.run.records import RunDir
from apmbench.harness.suites import BUILTIN, SUITE_REGISTRY, datasets, get_suite

ALL = "all"
"""`--benchmark all`: the built-in suites (a plugin's suite joins by being named in a list)."""

_RANK = {0: 0, EXIT_JUDGE_UNREACHABLE: 1, EXIT_USAGE: 2, EXIT_SYSTEM: 3}
"""How bad a suite's exit code is: a suite left without a report (3: the system failed;
2: its settings were refused) outranks one whose report lacks only the judge's numbers
(4). Any other code ranks with a system failure; a signal's (128 and up) above all."""


def names_several(value: str | None) -> bool:
    """Whether a `--benchmark` value names several suites (`all`, or a comma list)."""
    return value is not None and (value == ALL or "," in value)


def suite_names(value: str) -> list[str]:
    """The suites `--benchmark all` or `--benchmark a,b,...` names, in the given order;
    ConfigError for an empty, unknown or repeated name."""
    if value == ALL:
        return list(BUILTIN)
    names = [name.strip() for name in value.split(",")]
    if "" in names:
        raise ConfigError(f"{value!r} has an empty name: give names separated by commas")
    if ALL in names:
        raise ConfigError(f"{ALL!r} stands alone: --benchmark {ALL}, or a list of suite names")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(
            f"{', '.join(repeated)} is named more than once in {value!r}: each suite runs once"
        )
    for name in names:
        SUITE_REGISTRY.entry(name)  # an unknown name is refused with the closest ones
    return names


def checked_benchmarks(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`evaluate --benchmark`'s callback: one suite's name as every command takes it, or
    `all`, or a comma list of distinct known names."""
    if not names_several(value):
        return checked_benchmark(ctx, param, value)
    assert value is not None
    try:
        suite_names(value)
    except ConfigError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from e
    return value


def several_suites(s: EvaluateCommand) -> bool:
    return names_several(s.options.benchmark)


def _interrupted(code: int) -> bool:
    return code >= 128


def worst_exit(codes: Sequence[int]) -> int:
    """The exit code of the whole set: the worst of the suites' (see `_RANK`)."""
    return max(codes, key=lambda c: 10 + c if _interrupted(c) else _RANK.get(c, 3), default=0)


def suites_out(s: EvaluateCommand) -> Path:
    """Where the suites' run directories go: --out, else runs/suites-<system>/."""
    return s.options.out or Path("runs") / f"suites-{s.runtime.label}"


def _refuse_what_differs(s: EvaluateCommand, names: Sequence[str], out: Path) -> None:
    """Exit 2, before anything starts, for what cannot run on every suite named."""
    given = f"--benchmark {s.options.benchmark}"
    if s.options.dataset is not None:
        raise click.UsageError(
            f"--dataset with {given}: a dataset is one suite's. Use --synthetic SIZE (each "
            "suite gets its own synthetic benchmark), or run the suites one by one with "
            "--benchmark NAME --dataset DIR"
        )
    if s.embedded:
        raise click.UsageError(
            f"{given} runs one system on each suite: give --system NAME, --command CMD, "
            "--image IMAGE, --endpoint ADDRESS or --runtime NAME (the comparison of every "
            "reference system runs one suite at a time: --benchmark NAME)"
        )
    if s.options.shard is not None:
        raise click.UsageError(
            f"--shard with {given}: a shard is scored only after `merge`, suite by suite; "
            "run each suite's shards with --benchmark NAME"
        )
    try:
        s.runtime.check_system()
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    preset = (s.options.generate or SyntheticRequest()).preset
    variant = s.options.variant
    for name in names:
        suite = get_suite(name)
        if variant is not None and variant not in suite.variants:
            known = ", ".join(suite.variants) or "none"
            raise click.UsageError(
                f"--variant {variant} does not suit {name} (its variants: {known}): a variant "
                "is one suite's condition, run it with --benchmark NAME"
            )
        try:
            datasets.check_fps(suite, s.options.frames.fps)
        except ConfigError as e:
            raise click.UsageError(f"--fps does not suit {name}: {e}") from e
        try:
            datasets.check_preset(suite, preset)
        except ConfigError as e:
            raise click.UsageError(f"--synthetic does not suit {name}: {e}") from e
    if RunDir(out).holds_run():
        raise click.UsageError(
            f"{out} is itself a run directory; {given} writes one run directory per suite "
            "under --out: choose another --out"
        )
    for name in names:
        try:
            RunDir(out / name).check_usable(s.options.resume)
        except RunDirError as e:
            raise click.UsageError(str(e)) from e


def _exit_code(run_one: Callable[[EvaluateCommand], None], s: EvaluateCommand) -> int:
    """Run one suite's evaluation; the code it exits with (0 when it returns). `evaluate`
    ends a failed run with sys.exit, which here ends only that suite's turn."""
    try:
        run_one(s)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except click.ClickException as e:
        console.print(f"[red]error:[/red] {shown.markup(e.format_message())}")
        return e.exit_code
    except KeyboardInterrupt as e:  # outside the run itself (preparing its dataset, say)
        code, what = interrupted_exit(e)
        console.print(what)
        return code
    return 0


def run_suites(s: EvaluateCommand, run_one: Callable[[EvaluateCommand], None]) -> None:
    """Each suite of `--benchmark` in turn through `run_one` (evaluate's own run), each into
    OUT/<suite>; then the page across suites; exits with the worst suite's code."""
    from apmbench.harness.orchestrate.multi_suite import REPORT_NAME, SuiteRun, write_suites_page

    assert s.options.benchmark is not None
    names = suite_names(s.options.benchmark)
    out = suites_out(s)
    _refuse_what_differs(s, names, out)
    done: list[SuiteRun] = []
    for number, name in enumerate(names, 1):
        run_dir = out / name
        # --resume continues each suite that has a run, and starts the others afresh.
        resume = s.options.resume and RunDir(run_dir).holds_run()
        console.print(f"suite {number}/{len(names)}: {name} -> {shown.markup(run_dir)}")
        code = _exit_code(
            run_one,
            replace(s, options=replace(s.options, benchmark=name, out=run_dir, resume=resume)),
        )
        done.append(SuiteRun(name, run_dir, code))
        if _interrupted(code):
            break
    runs = done + [SuiteRun(name, out / name, None) for name in names[len(done) :]]
    page = write_suites_page(runs, out, s.runtime.label)
    click.echo(shown.plain((out / REPORT_NAME).read_text()))
    click.echo(f"comparison: {page}")
    code = worst_exit([r.exit_code for r in done if r.exit_code is not None])
    failed = [r for r in runs if r.exit_code != 0]
    if failed:
        what = ", ".join(
            f"{r.name} ({'not run' if r.exit_code is None else f'exit {r.exit_code}'})"
            for r in failed
        )
        console.print(
            f"[red]not every suite finished:[/red] {shown.markup(what)}. The messages above "
            f"say why; every suite's run directory is kept under {shown.markup(out)}, and the "
            "same command with --resume continues each where it stopped"
        )
        sys.exit(code)
