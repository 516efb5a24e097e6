"""`apmbench-grpc evaluate`: run a system on a dataset, write a run directory."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from apmbench.adapters.sdk.errors import ApmbenchError, ProtocolError
from apmbench.adapters.sdk.types import FrameEncoding
from apmbench.adapters.systems import compared_systems
from apmbench.harness import logs, shown
from apmbench.harness.commands.common import (
    EXIT_SYSTEM,
    EXIT_USAGE,
    SANDBOX_SECTION,
    console,
    container_section,
    interrupted_exit,
    process_options,
    start_option,
    stoppable,
)
from apmbench.harness.commands.evaluate_command import EvaluateCommand
from apmbench.harness.commands.evaluate_suites import (
    checked_benchmarks,
    run_suites,
    several_suites,
    worst_exit,
)
from apmbench.harness.commands.help_format import command, sections
from apmbench.harness.commands.judge_options import (
    AUTO,
    EXIT_JUDGE_UNREACHABLE,
    JUDGE_SECTION,
    judge_config,
    judge_options,
    judge_unreachable,
    judge_warnings,
)
from apmbench.harness.commands.limits import (
    CAP_OPTIONS,
    DEADLINE_OPTIONS,
    Caps,
    cap_options,
    deadline_options,
)
from apmbench.harness.commands.out_paths import OutputPath
from apmbench.harness.errors import ConfigError, DatasetError, RunDirError
from apmbench.harness.media.frames import FrameSettings
from apmbench.harness.orchestrate.settings import (
    AUTO_JUDGE,
    DEFAULT_PRESET,
    SEED_LIMIT,
    EvaluateOptions,
    SyntheticRequest,
)
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.reports import confinement
from apmbench.harness.run.executor import Persistence
from apmbench.harness.run.live import DEFAULT_BUFFER_S, LiveSettings
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.docker.cli_options import container_options
from apmbench.harness.runtimes.docker.settings import ContainerSettings
from apmbench.harness.suites import (
    BUILTIN,
    withheld,
)
from apmbench.harness.wording import counted

if TYPE_CHECKING:
    from apmbench.harness.orchestrate.evaluate import Evaluation
    from apmbench.harness.orchestrate.resolve import Resolved
    from apmbench.harness.run.progress_log import Progress as RunProgress
    from apmbench.harness.scoring.judge import JudgeConfig
    from apmbench.harness.suites.base import Headline


@command()
@sections(
    (
        "Data",
        "what the system is evaluated on",
        ("--dataset", "--benchmark", "--synthetic", "--seed", "--variant"),
    ),
    (
        "System",
        "what runs; none of these: every reference system, and a comparison",
        (
            "--system",
            "--command",
            "--endpoint",
            "--image",
            "--runtime",
            "--runtime-option",
            "--env",
        ),
    ),
    ("Frames", "how the video is sent", ("--fps", "--max-side", "--encoding")),
    (
        "Live play",
        "on the video's clock instead of an offline replay (docs/live.md)",
        ("--live", "--speed", "--live-buffer"),
    ),
    (
        "Persistence & starts",
        "what crosses a session gap, and how restarted systems start",
        ("--persistence", "--start", "--no-spare", "--spare-memory", "--fork-snapshots"),
    ),
    SANDBOX_SECTION,
    container_section(),
    (
        "Deadlines & caps",
        "how long each call may take, how much a system may make the harness keep",
        ("--query-timeout", "--startup-timeout", *DEADLINE_OPTIONS, *CAP_OPTIONS),
    ),
    JUDGE_SECTION,
    (
        "Audits",
        "checks of the system's honesty on a sample (docs/checking.md)",
        ("--audit", "--audit-queries", "--audit-trajectories"),
    ),
    (
        "Scale-out",
        "part of a run, or a Ray cluster (docs/scale-out.md)",
        ("--shard", "--backend", "--ray-address", "--ray-gpus"),
    ),
    ("Output", "the run directory", ("--out", "--resume")),
)
@click.option(
    "--dataset",
    "dataset",
    type=click.Path(path_type=Path),
    default=None,
    help="Dataset directory (dataset.json, candidates/, videos/).",
)
@click.option(
    "--benchmark",
    callback=checked_benchmarks,
    default=None,
    help=f"The benchmark suite: {', '.join(BUILTIN)}, or one an installed plugin registers. "
    "Default: the one the dataset names, else apmbench. 'all' or a comma list (e.g. "
    "apmbench,egoprobe): the one system on each suite in turn, into OUT/<suite>, and a "
    "comparison page in OUT.",
)
@click.option(
    "--synthetic",
    default=None,
    help="Use the suite's built-in synthetic benchmark of this size (tiny, small or paper; "
    "generated once per preset and seed, then cached).",
)
@click.option(
    "--seed",
    type=click.IntRange(0, SEED_LIMIT - 1),
    default=None,
    help="Seed of --synthetic. Default: drawn at random and recorded in manifest.json, so no "
    "system can regenerate the labels from a seed it could guess; give it to reproduce a "
    "dataset (the report then says the seed was known).",
)
@click.option(
    "--variant",
    default=None,
    help="Play the dataset in one of the suite's controlled conditions instead of its own: "
    "APM-Bench's trajectory organisations 'oracle' (only each candidate's evidence) and "
    "'raw-lifelong' (the video between sessions too); ProactEgoMem's 'per-step' (each step "
    "sees only the prompt, the context and the last 10 frames). The report names it and "
    "compare keeps variants apart.",
)
@click.option(
    "--system",
    "system",
    help="Reference system to run as a local process, or module:Class. With no --system "
    "(or --endpoint), every reference system runs and a comparison table is printed.",
)
@click.option("--endpoint", help="Address of an already running server (unix:/path or host:port).")
@click.option(
    "--command",
    "command",
    help="Any server command line with {address} in it, e.g. 'node server.js {address}': "
    "started (and restarted) as a sandboxed local process from the current directory; "
    "{address} becomes unix:/path/to/sock.",
)
@click.option(
    "--runtime",
    "runtime",
    default=None,
    help="A runtime registered by name (an installed plugin's), instead of --system, "
    "--command, --endpoint or --image; its settings come from --runtime-option.",
)
@click.option(
    "--runtime-option",
    "runtime_option",
    multiple=True,
    metavar="KEY=VALUE",
    help="A setting of --runtime (repeatable); only the keys that runtime declares.",
)
@click.option(
    "--persistence",
    type=click.Choice([p.value for p in Persistence]),
    default=None,
    help="What crosses a session gap. Default: restart where the runtime can restart "
    "the system, else reset (an --endpoint, a --runtime that cannot restart).",
)
@click.option(
    "--out",
    type=OutputPath(),
    default=None,
    help="Run directory. Default: runs/<dataset>/<system>. With no system named: the "
    "directory each system's run goes under (OUT/<system>); with --benchmark all: each "
    "suite's (OUT/<suite>, default runs/suites-<system>); --backend ray also writes "
    "OUT.parts until the parts are merged.",
)
@click.option(
    "--resume", is_flag=True, help="Continue a run directory, skipping finished trajectories."
)
@click.option(
    "--fps", type=float, default=1.0, show_default=True, help="Frames pushed per second of video."
)
@click.option(
    "--max-side",
    type=int,
    default=448,
    show_default=True,
    help="Longest frame side unless the system prefers another.",
)
@click.option(
    "--encoding",
    type=click.Choice([e.value for e in FrameEncoding]),
    default="jpeg",
    show_default=True,
    help="Frame encoding when the system accepts it.",
)
@click.option(
    "--query-timeout", type=float, default=600.0, show_default=True, help="Seconds per Query."
)
@click.option(
    "--startup-timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds for the system to report SERVING.",
)
@click.option(
    "--audit",
    is_flag=True,
    help="Audit a seeded sample: state before/after queries, repeats under fresh ids (caching), "
    "streamed chunks, a restart-mode rerun; results in report.json and the manifest.",
)
@click.option(
    "--audit-queries",
    type=int,
    default=3,
    show_default=True,
    help="With --audit: queries per trajectory exported around, and repeated under fresh ids.",
)
@click.option(
    "--audit-trajectories",
    type=int,
    default=1,
    show_default=True,
    help="With --audit: trajectories rerun in restart mode (when the run's mode is not restart).",
)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Run only part I of N (0-based) of the trajectories, for a scheduler to place "
    "(Slurm array, Kubernetes Indexed Job); join the parts with `apmbench-grpc merge`. "
    "Several shards may share one --out.",
)
@click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="ray: one Ray task per trajectory on a Ray cluster, merged into --out (needs the "
    "'ray' extra).",
)
@click.option(
    "--ray-address",
    default=None,
    help="With --backend ray: the cluster (e.g. 10.0.0.1:6379); default: RAY_ADDRESS, else a "
    "local one.",
)
@click.option(
    "--ray-gpus",
    type=float,
    default=0.0,
    show_default=True,
    help="With --backend ray: GPUs each trajectory's task reserves.",
)
@deadline_options(Deadlines())
@cap_options
@start_option
@click.option(
    "--no-spare",
    is_flag=True,
    help="In restart mode: do not start the next processes or containers (new, empty, each "
    "in its own sandbox or container) while the current one works; each restart then waits "
    "for a whole start-up. Default: spares are started, as many as the measured start time "
    "over the time between restarts asks for, within --spare-memory (a model-based system's "
    "too); never on a shared network (--sandbox-net, a container network other than none).",
)
@click.option(
    "--spare-memory",
    default=None,
    metavar="SIZE",
    help="Memory all spares together may hold (e.g. 8g), each measured once serving, its "
    "model included. Default: half of the host's available memory, and for a system on a "
    "GPU what nvidia-smi says the GPU holds beside it (a --gpus container: no spare). A "
    "value given here stands for the GPU's memory too.",
)
@click.option(
    "--live",
    is_flag=True,
    help="Play each session on the video's clock: frames, user turns and questions are "
    "offered at their times whether or not the system has finished what it was given; a "
    "question's latency runs from its time, frames waiting past --live-buffer are dropped. "
    "Session gaps, exports and imports happen between sessions as in a replay. The report "
    "says 'live at X' and compare keeps live and offline runs apart.",
)
@click.option(
    "--speed",
    type=float,
    default=None,
    metavar="X",
    help="With --live: seconds of video per second of wall time (default 1: real time).",
)
@click.option(
    "--live-buffer",
    type=float,
    default=None,
    metavar="SECONDS",
    help="With --live: frames waiting for the system beyond this much video are dropped, "
    "the oldest first, as a camera's ring buffer overwrites them (default 1).",
)
@click.option(
    "--fork-snapshots",
    is_flag=True,
    help="In restart mode, with a system declaring resumes_sessions (R14): start each fork "
    "from a snapshot the main pass exports just before the fork's first turn or question "
    "instead of replaying its session (a third fewer frames on the paper preset). Off by "
    "default: the export's time tells the system a question is near, which its state can "
    "carry into the fork's untimed ImportState; the manifest and report say which path ran.",
)
@judge_options(default_judge=AUTO)
@process_options
@container_options
@stoppable
def evaluate(**given: Any) -> None:
    """Run a system on a dataset and write a run directory with its report.

    Examples:

        apmbench-grpc evaluate --synthetic tiny --system text-log
        apmbench-grpc evaluate --dataset DIR --image my-method:dev --out runs/m

    With no arguments: the built-in synthetic benchmark (`small`) with every
    reference system, one after another, and a comparison table.
    """
    settings = settings_of(**given)
    if several_suites(settings):
        run_suites(settings, run_suite)
    else:
        run_suite(settings)


def settings_of(
    benchmark: str | None,
    dataset: Path | None,
    synthetic: str | None,
    seed: int | None,
    system: str | None,
    endpoint: str | None,
    command: str | None,
    runtime: str | None,
    runtime_option: tuple[str, ...],
    persistence: str | None,
    out: Path | None,
    resume: bool,
    fps: float,
    max_side: int,
    encoding: str,
    query_timeout: float,
    startup_timeout: float,
    audit: bool,
    audit_queries: int,
    audit_trajectories: int,
    shard: str | None,
    backend: str,
    ray_address: str | None,
    ray_gpus: float,
    no_spare: bool,
    start_mode: str,
    fork_snapshots: bool,
    live: bool,
    speed: float | None,
    live_buffer: float | None,
    spare_memory: str | None,
    image: str | None,
    container: ContainerSettings,
    sandbox: bool,
    sandbox_net: bool,
    process_env: tuple[str, ...],
    deadlines: Deadlines,
    caps: Caps,
    variant: str | None = None,
    **judge: Any,
) -> EvaluateCommand:
    """The options as click parsed them, checked against each other; a usage error names
    what to change."""
    from apmbench.harness.orchestrate.shards import Shard
    from apmbench.harness.run.audits.settings import AuditSettings

    if min(audit_queries, audit_trajectories) < 0:
        raise click.BadParameter("must not be negative", param_hint="--audit-queries/-trajectories")
    if not audit and _given("audit_queries", "audit_trajectories"):
        raise click.UsageError("--audit-queries and --audit-trajectories: only with --audit")
    if dataset is not None and synthetic is not None:
        raise click.UsageError("give --dataset DIR or --synthetic PRESET, not both")
    if sum(x is not None for x in (system, endpoint, image, command, runtime)) > 1:
        raise click.UsageError(
            "give one of --system NAME, --command 'CMD {address}', --endpoint ADDRESS, "
            "--image IMAGE, --runtime NAME"
        )
    try:
        part = Shard.parse(shard) if shard is not None else None
    except ConfigError as e:
        raise click.BadParameter(str(e), param_hint="--shard") from e
    if backend == "ray":
        from apmbench.harness.orchestrate.ray_backend import check_ray_options

        try:
            check_ray_options(part)
        except ConfigError as e:
            raise click.UsageError(str(e)) from e
    if ray_gpus < 0:
        raise click.BadParameter("must not be negative", param_hint="--ray-gpus")
    if backend != "ray" and (ray_address is not None or ray_gpus):
        raise click.UsageError("--ray-address and --ray-gpus: only with --backend ray")
    if fps <= 0:
        raise click.BadParameter("must be positive", param_hint="--fps")
    if not live and (speed is not None or live_buffer is not None):
        raise click.UsageError("--speed and --live-buffer: only with --live")
    try:
        played = (
            LiveSettings(
                speed=1.0 if speed is None else speed,
                buffer_s=DEFAULT_BUFFER_S if live_buffer is None else live_buffer,
            )
            if live
            else None
        )
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    if live and audit:
        raise click.UsageError(
            "--live and --audit: the audits re-ask questions off the clock; audit an offline run"
        )
    if live and fork_snapshots:
        raise click.UsageError(
            "--live plays every session from its start on the clock: drop --fork-snapshots"
        )
    embedded = all(x is None for x in (system, endpoint, image, command, runtime))
    if embedded and part is not None:
        raise click.UsageError(
            "--shard runs part of one system's evaluation: give --system NAME, --command CMD, "
            "--image IMAGE, --endpoint ADDRESS or --runtime NAME"
        )
    if dataset is None and part is not None and seed is None:
        raise click.UsageError(
            "--shard of a synthetic benchmark needs --seed S: every shard must play the same "
            "dataset (a seed drawn per shard would give each another)"
        )
    if dataset is not None and seed is not None:
        raise click.UsageError("--seed is the seed of --synthetic: drop it with --dataset DIR")
    runtime_options = _key_values(runtime_option)
    budget = _spare_budget(spare_memory)
    try:
        # The runtimes package maps the options to a runtime: with none named, each
        # reference system runs as --system NAME would.
        specs = tuple(
            runtime_spec(
                system=name,
                endpoint=endpoint,
                image=image,
                command=command,
                runtime=runtime,
                runtime_options=runtime_options,
                container=container,
                sandbox=sandbox,
                sandbox_net=sandbox_net,
                env=process_env,
                start=start_mode,
                max_log_bytes=caps.max_log_bytes,
                spare=not no_spare,
                spare_budget=budget,
            )
            for name in (_candidates() if embedded else [system])
        )
    except ConfigError as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    judge_optional = bool(judge.pop("judge_optional", False))
    evaluation = EvaluateOptions(
        dataset=dataset,
        out=out,
        runtime=specs[0],
        benchmark=benchmark,
        persistence=Persistence(persistence) if persistence else None,
        resume=resume,
        frames=FrameSettings(fps=fps, max_side=max_side, encoding=FrameEncoding(encoding)),
        deadlines=deadlines,
        startup_timeout_s=startup_timeout,
        judge=_judge(judge),
        audit=AuditSettings(
            mutation_queries=audit_queries,
            caching_queries=audit_queries,
            persistence_trajectories=audit_trajectories,
        )
        if audit
        else None,
        shard=part,
        max_state_bytes=caps.max_state_bytes,
        max_work_bytes=caps.max_work_bytes,
        variant=variant,
        live=played,
        resume_forks=fork_snapshots,
        generate=None
        if dataset is not None
        else SyntheticRequest(synthetic or DEFAULT_PRESET, seed),
    )
    return EvaluateCommand(
        options=evaluation,
        runtimes=specs,
        embedded=embedded,
        ray=(ray_address, ray_gpus) if backend == "ray" else None,
        judge_optional=judge_optional,
    )


def _judge(given: dict[str, Any]) -> JudgeConfig:
    """The judge options as one JudgeConfig; `--judge auto` is left for the resolve stage,
    which knows whether the dataset has a reference judge."""
    if given["judge"] != AUTO:
        return judge_config(**given)
    model_options = ("judge_model", "judge_base_url", "judge_api_key_env")
    if _given(*model_options):
        raise click.UsageError(
            "--judge-model, --judge-base-url and --judge-api-key-env choose an LLM judge's "
            "model: give --judge openai (or another judge by name) with them; --judge auto "
            "picks the synthetic reference judge or none, which take no model"
        )
    return replace(judge_config(**{**given, "judge": None}), kind=AUTO_JUDGE)


def run_suite(s: EvaluateCommand) -> None:
    """One suite's evaluation, or with no system named every compared system's and their
    comparison: resolved here, once, then the rest of the pipeline per system."""
    from apmbench.harness.orchestrate.resolve import runs_of

    resolved = _resolve(s.options)
    dataset = resolved.options.dataset
    assert dataset is not None
    if s.embedded and withheld.is_public(dataset):
        raise click.UsageError("a public part is evaluated one system at a time: give --system")
    given = s.options.out
    if not s.embedded:
        _, code = _run(resolved, quiet=False, judge_optional=s.judge_optional, ray=s.ray)
        if code:
            sys.exit(code)
        return
    answering = compared_systems(benchmark=resolved.suite.name)
    runtimes = tuple(spec for spec in s.runtimes if spec.name in answering)
    if not runtimes:
        console.print(
            f"[red]error:[/red] no reference system answers {shown.markup(resolved.suite.name)}"
            ": give --system NAME (or --command, --image, --endpoint, --runtime)"
        )
        sys.exit(EXIT_USAGE)
    _compare_systems(replace(s, runtimes=runtimes), resolved, given or runs_of(dataset))


def _compare_systems(s: EvaluateCommand, resolved: Resolved, base: Path) -> None:
    """Every compared system on the resolved dataset, each into BASE/<system>, then their
    table and comparison page. A system that fails is reported and the others still run;
    the command then exits with the worst code (an interrupt stops it at once)."""
    suite = resolved.suite
    demo = _ComparisonLog(len(s.runtimes))
    demo.left_out(suite.name)
    results: list[tuple[str, Evaluation]] = []
    failed: list[tuple[str, int]] = []
    for number, spec in enumerate(s.runtimes, 1):
        demo.started(spec.name, number)
        one = replace(resolved.options, runtime=spec, out=base / spec.label)
        try:
            system = replace(resolved, options=one)
            result, code = _run(system, quiet=True, judge_optional=s.judge_optional, ray=s.ray)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if code >= 128:  # interrupted: stop here, as the message above said
                raise
            failed.append((spec.name, code))
            demo.failed(spec.name, number, code)
            continue
        if code:  # finished and reported, without the judge's numbers: compared all the same
            failed.append((spec.name, code))
        results.append((spec.name, result))
        demo.finished(spec.name, number, suite.report_format().headline(result.report))
    if results:
        wide = Console(width=120)
        for table in suite.report_format().summary_tables(
            [r.report for _, r in results], [name for name, _ in results]
        ):
            wide.print(table)
        click.echo("run directories: " + ", ".join(str(r.run_dir) for _, r in results))
        click.echo("reports: " + ", ".join(str(r.run_dir / "report.html") for _, r in results))
        click.echo(f"comparison: {_comparison_view([r.run_dir for _, r in results], base)}")
    if failed:
        what = ", ".join(f"{name} (exit {code})" for name, code in failed)
        console.print(
            f"[red]not every system finished:[/red] {shown.markup(what)}. The messages above "
            f"say why; each run directory is kept under {shown.markup(base)}"
        )
        sys.exit(worst_exit([code for _, code in failed]))


def _resolve(opts: EvaluateOptions) -> Resolved:
    """The resolve stage, with a status line while a synthetic benchmark is generated;
    exit 2 with the reason when the settings do not resolve."""
    from apmbench.harness.orchestrate.resolve import resolve

    try:
        return resolve(opts, _preparing)
    except (ConfigError, DatasetError) as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)


def _preparing(what: str) -> contextlib.AbstractContextManager[object]:
    if not console.is_terminal:  # a terminal shows the status line instead
        logs.get("evaluate").info(what)
    return console.status(what)


class _ComparisonLog:
    """The embedded comparison's progress lines: which system, how far, how long to go."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.log = logs.get("demo")
        self.began = time.monotonic()
        self.system_began = self.began

    def left_out(self, benchmark: str) -> None:
        """One line per registered system the comparison does not run, saying why."""
        from apmbench.adapters.systems import left_out

        for name, why in left_out(benchmark).items():
            self.log.info("system not run", system=name, why=why)

    def started(self, name: str, number: int) -> None:
        self.system_began = time.monotonic()
        self.log.info("system started", system=name, system_number=f"{number}/{self.total}")

    def failed(self, name: str, number: int, code: int) -> None:
        now = time.monotonic()
        self.log.info(
            "system failed",
            system=name,
            system_number=f"{number}/{self.total}",
            exit_code=code,
            took_s=round(now - self.system_began, 1),
        )

    def finished(self, name: str, number: int, headline: Headline) -> None:
        from apmbench.harness.run.progress_log import eta_s

        now = time.monotonic()
        elapsed = now - self.began
        self.log.info(
            "system finished",
            system=name,
            system_number=f"{number}/{self.total}",
            took_s=round(now - self.system_began, 1),
            elapsed_s=round(elapsed, 1),
            eta_s=round(eta_s(number, self.total, elapsed) or 0, 1),
            **{headline.utility_label: _rounded(headline.utility)},
        )


def _candidates() -> tuple[str, ...]:
    """Every system the comparison with no system named may run, on whichever suite the
    dataset turns out to be (run_suite keeps those that answer it)."""
    names = compared_systems()
    for suite in BUILTIN:
        names += tuple(n for n in compared_systems(benchmark=suite) if n not in names)
    return names


def _given(*names: str) -> bool:
    """Whether any of these options was given on the command line (not left at its
    default), for an option that means nothing without another."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and any(
        ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE for name in names
    )


def _key_values(given: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--runtime-option")
        pairs.append((key, value))
    return tuple(pairs)


def _comparison_view(run_dirs: list[Path], base: Path) -> Path:
    from apmbench.harness.orchestrate.html.view import COMPARISON_NAME, write_view

    demo_log = logs.get("demo")
    demo_log.info("writing the comparison", runs=len(run_dirs))
    return write_view(run_dirs, base / COMPARISON_NAME)


def _rounded(value: float | None) -> float | str:
    return "n/c" if value is None else round(value, 2)


def _what_works(out: Path, ray: bool = False) -> str:
    """After a failure: what is kept in `out`, and exactly which rerun continues it."""
    from apmbench.harness.run.records import RunDir

    if ray:
        from apmbench.harness.orchestrate.ray_backend import finished_parts
        from apmbench.harness.orchestrate.shards import parts_dir

        done = finished_parts(out)
        if done is not None:
            return (
                f"{counted(done, 'finished trajectory')} {'is' if done == 1 else 'are'} kept "
                f"in {parts_dir(out)}; rerun with --resume --out {out} (the command otherwise "
                "unchanged) to continue"
            )
    run = RunDir(out)
    if not run.holds_run():
        return (
            f"no trajectory was run; {out} keeps only the system's log: fix the cause and "
            "rerun the same command (with or without --resume)"
        )
    done = run.finished_count()
    return (
        f"{counted(done, 'finished trajectory')} {'is' if done == 1 else 'are'} kept in {out}; "
        f"rerun with --resume --out {out} (the command otherwise unchanged) to continue"
    )


Pipeline = Callable[["Resolved", "RunProgress"], "Evaluation"]
"""The pipeline after the resolve stage, with its progress callbacks."""


def _pipeline(ray: tuple[str | None, float] | None) -> Pipeline:
    """The pipeline after the resolve stage, here or with every trajectory a task on a Ray
    cluster."""
    if ray is None:
        from apmbench.harness.orchestrate.evaluate import run

        return run
    from apmbench.harness.orchestrate.ray_backend import evaluate_ray

    address, gpus = ray
    return lambda r, progress: evaluate_ray(r, address, progress, gpus_per_task=gpus)


def _run(
    resolved: Resolved,
    quiet: bool,
    judge_optional: bool = False,
    ray: tuple[str | None, float] | None = None,
) -> tuple[Evaluation, int]:
    """One evaluation with a progress display, and the code the command exits with for it
    (0, or 4 when its judge could not be reached); a run that fails exits here with a
    code a person can act on.

    On a terminal, rich progress bars; otherwise (CI logs, nohup, a pipe) log lines,
    at least one a minute.
    """
    pipeline = _pipeline(ray)
    opts, out = resolved.options, resolved.out
    try:
        if console.is_terminal:
            result = _run_with_bar(resolved, pipeline)
        else:
            from apmbench.harness.run.progress_log import LogProgress

            with LogProgress(opts.runtime.label) as lines:
                result = pipeline(resolved, lines.callbacks())
    except (DatasetError, ConfigError, RunDirError) as e:
        console.print(f"[red]error:[/red] {shown.markup(e)}")
        sys.exit(EXIT_USAGE)
    except ApmbenchError as e:
        kind = "system error" if isinstance(e, ProtocolError) else "error"
        console.print(f"[red]{kind}:[/red] {shown.markup(e)}")
        console.print(shown.markup(_what_works(out, ray is not None)))
        sys.exit(EXIT_SYSTEM)
    except KeyboardInterrupt as e:
        code, what = interrupted_exit(e)
        console.print(shown.markup(f"{what}: {_what_works(out, ray is not None)}"))
        sys.exit(code)
    return result, _present(result, opts, quiet, judge_optional)


def _present(result: Evaluation, opts: EvaluateOptions, quiet: bool, judge_optional: bool) -> int:
    """What a finished evaluation says, and its exit code (0, or 4: judge unreachable)."""
    if opts.shard is not None:
        click.echo(
            f"shard {opts.shard.name}: its trajectories are recorded in {result.run_dir}; when "
            "every shard is done: apmbench-grpc merge DIR... --out MERGED"
        )
        return 0
    predictions = result.predictions
    if predictions is not None:  # a public part: labels are elsewhere
        click.echo(
            f"labels withheld: predictions written to {predictions}; score them where the "
            f"labels are: apmbench-grpc score {predictions} --labels PRIVATE --out DIR"
        )
        return 0
    if not quiet:
        click.echo(shown.plain((result.run_dir / "report.md").read_text()))
        click.echo(f"run directory: {result.run_dir}")
    manifest = result.manifest
    if not confinement.storage_verified(manifest):
        console.print(
            f"[yellow]warning:[/yellow] Storage/hr is unverified under persistence "
            f"{confinement.persistence(manifest)}: memory kept in RAM across sessions is not "
            "counted; only restart measures the whole memory"
        )
    if "audit" in result.report:
        flags = result.report["audit"]["flags"]
        many = counted(flags, "flag") if isinstance(flags, int) else f"{flags} flags"
        verdict = "clean" if not flags else f"[red]{many}[/red]: see report.json, 'audit'"
        console.print(f"audit: {verdict}")
    unreachable = judge_unreachable(result.report)
    for warning in judge_warnings(result.report):
        if unreachable is None or judge_optional or "could not be reached" not in warning:
            console.print(f"[yellow]warning:[/yellow] {shown.markup(warning)}")
    if unreachable is not None and not judge_optional:
        console.print(f"[red]error:[/red] {shown.markup(unreachable)}")
        console.print(f"run directory: {result.run_dir}")
        return EXIT_JUDGE_UNREACHABLE
    return 0


def _run_with_bar(resolved: Resolved, pipeline: Pipeline) -> Evaluation:
    """The rich progress display, for a terminal."""
    from apmbench.harness.run.progress_log import Progress as RunProgress

    log = logs.get("evaluate")
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        overall = bar.add_task("trajectories", total=None)
        current = bar.add_task("segments", total=None, visible=False)

        def trajectories(total: int, skipped: int) -> None:
            bar.update(overall, total=total, completed=skipped)
            if skipped:
                log.info("resuming", finished=skipped, remaining=total - skipped)

        def started(tid: str, segments: int) -> None:
            bar.update(current, description=tid, total=segments, completed=0, visible=True)

        callbacks = RunProgress(
            trajectories=trajectories,
            trajectory_started=started,
            segment_started=lambda s: bar.advance(current),
            trajectory_done=lambda tid: bar.advance(overall),
            judged=lambda done, total: bar.update(
                current, description="judging", completed=done, total=total, visible=True
            ),
        )
        result = pipeline(resolved, callbacks)
    return result


def _spare_budget(text: str | None) -> int | None:
    from apmbench.harness.runtimes.docker.settings import parse_size

    if text is None:
        return None
    try:
        size = parse_size(text, "--spare-memory")
    except ConfigError as e:
        raise click.BadParameter(str(e), param_hint="--spare-memory") from e
    return 1 << 62 if size is None else size  # 'none': no bound
