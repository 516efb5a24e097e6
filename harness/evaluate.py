"""`apmbench-grpc evaluate`: a dataset, a system, a run directory, a report."""

from __future__ import annotations

import datetime as dt
import os
import platform
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc

from apmbench.adapters.sdk.types import PROTOCOL_VERSION, SystemInfo
from apmbench.harness import __version__, records
from apmbench.harness.check.audit import AuditSettings, TrajectoryAudit
from apmbench.harness.check.audit_persistence import (
    caching_obstacle,
    finish_trajectory,
    sampled_trajectories,
)
from apmbench.harness.check.audit_summary import audit_headline
from apmbench.harness.client import Deadlines, SystemClient
from apmbench.harness.dataset import Dataset, load_dataset
from apmbench.harness.docker.settings import ContainerSettings
from apmbench.harness.frames import FrameSettings
from apmbench.harness.judge import ChatBackend, JudgeConfig, open_judge
from apmbench.harness.run_scoring import score_run, scoring_record
from apmbench.harness.runner import (
    Persistence,
    RunSettings,
    TrajectoryRunner,
    check_settings,
    describe_info,
)
from apmbench.harness.runtimes import EndpointRuntime, Runtime, sandboxed_process
from apmbench.harness.schedule import Segment, plan_trajectory


@dataclass(frozen=True)
class EvaluateOptions:
    dataset: Path
    out: Path
    system: str | None = None
    """A registered system name or "module:Class", run as a local process."""
    endpoint: str | None = None
    """Address of a server that is already running ("unix:/path" or "host:port")."""
    image: str | None = None
    """A container image that serves the system, run by the Docker runtime."""
    container: ContainerSettings = field(default_factory=ContainerSettings)
    """How the image's container runs (hardened defaults); used with `image` only."""
    persistence: Persistence | None = None
    """None: `restart` where the runtime can restart the system, else `reset`."""
    resume: bool = False
    frames: FrameSettings = field(default_factory=FrameSettings)
    deadlines: Deadlines = field(default_factory=Deadlines)
    startup_timeout_s: float = 120.0
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    """The LLM judge of the adaptive tasks; `none` leaves judge-dependent numbers uncomputed."""
    audit: AuditSettings | None = None
    """Audit a sample of queries and trajectories (`--audit`); None: no audits."""
    sandbox: bool = True
    """Run `system` in a bubblewrap sandbox; False (`--no-sandbox`) runs it unconfined and
    every report says its numbers are not comparable."""
    env: tuple[str, ...] = ()
    """`--env NAME[=VALUE]` for the system's process: the only environment it gets besides
    its own `APMBENCH_VLM_*` settings when sandboxed."""


@dataclass
class Progress:
    """Callbacks for a progress display; all optional."""

    trajectories: Callable[[int, int], None] = lambda total, skipped: None
    trajectory_started: Callable[[str, int], None] = lambda tid, segments: None
    segment_started: Callable[[Segment], None] = lambda s: None
    trajectory_done: Callable[[str], None] = lambda tid: None
    judged: Callable[[int, int], None] = lambda done, total: None


@dataclass(frozen=True)
class Evaluation:
    run_dir: Path
    report: dict[str, Any]


def _host() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "grpcio": grpc.__version__,
    }


def _make_runtime(opts: EvaluateOptions, logs: Path) -> Runtime:
    if sum(x is not None for x in (opts.system, opts.endpoint, opts.image)) != 1:
        from apmbench.harness.errors import ConfigError

        raise ConfigError("give exactly one of --system NAME, --endpoint ADDRESS or --image IMAGE")
    if opts.image is not None:
        # Imported here: the docker SDK loads only for container runs.
        from apmbench.harness.docker.runtime import DockerRuntime

        return DockerRuntime(
            opts.image, logs.parent, opts.deadlines, opts.container, opts.startup_timeout_s
        )
    if opts.endpoint is not None:
        return EndpointRuntime(opts.endpoint, opts.deadlines, opts.startup_timeout_s)
    assert opts.system is not None
    from apmbench.adapters.systems import REGISTRY

    if opts.system not in REGISTRY and ":" not in opts.system:
        from apmbench.harness.errors import ConfigError

        known = ", ".join(sorted(REGISTRY))
        raise ConfigError(
            f"unknown system {opts.system!r}: use one of {known}, or 'package.module:ClassName'"
        )
    return sandboxed_process(
        opts.system,
        logs / "system.log",
        opts.deadlines,
        opts.startup_timeout_s,
        sandbox=opts.sandbox,
        env=opts.env,
        hidden=(opts.dataset, opts.out),
    )


def _system_spec(opts: EvaluateOptions, runtime: Runtime) -> str | None:
    """What --resume must find unchanged; an image by its id too, so a rebuilt image under
    the same tag is a different system."""
    if opts.image is not None:
        return f"{opts.image} ({runtime.describe()['image']['id']})"
    return opts.system or opts.endpoint


def _manifest(
    opts: EvaluateOptions,
    dataset: Dataset,
    info: SystemInfo,
    runtime: Runtime,
    settings: RunSettings,
    judge: ChatBackend | None,
) -> dict[str, Any]:
    return {
        "harness_version": __version__,
        "protocol_version": PROTOCOL_VERSION,
        "system": describe_info(info),
        "system_spec": _system_spec(opts, runtime),
        "runtime": runtime.describe(),
        "dataset": {
            "name": dataset.name,
            "path": str(dataset.root.resolve()),
            "trajectories": len(dataset.trajectories),
            "sessions": sum(len(t.sessions) for t in dataset.trajectories),
            "candidates": len(dataset.candidates),
        },
        "dataset_hash": dataset.content_hash,
        "settings": {**settings.as_dict(), "deadlines_s": asdict(opts.deadlines)},
        "scoring": scoring_record(opts.judge, judge),
        "host": _host(),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def write_report(
    run: records.RunDir,
    dataset: Dataset,
    judge_config: JudgeConfig | None = None,
    judge: ChatBackend | None = None,
    on_judged: Callable[[int, int], None] = lambda done, total: None,
) -> dict[str, Any]:
    """Assemble the tables from finished trajectories, judge and score them."""
    return score_run(run, dataset, judge_config or JudgeConfig(), judge, on_judged)


def evaluate(opts: EvaluateOptions, progress: Progress | None = None) -> Evaluation:
    progress = progress or Progress()
    dataset = load_dataset(opts.dataset)
    run = records.RunDir(opts.out)
    run.check_usable(opts.resume)
    # Opened before the system starts, so a judge that cannot work stops the run at once.
    judge = open_judge(opts.judge)
    with _make_runtime(opts, run.logs) as runtime:
        client: SystemClient = runtime.start()
        info = client.describe()
        persistence = opts.persistence or (
            Persistence.RESTART if runtime.can_restart else Persistence.RESET
        )
        settings = RunSettings(
            persistence=persistence,
            frames=opts.frames,
            audit=asdict(opts.audit) if opts.audit is not None else None,
        )
        check_settings(settings, info, runtime)
        run.prepare(_manifest(opts, dataset, info, runtime, settings, judge), opts.resume)
        todo = [t for t in dataset.trajectories if not run.is_done(t.trajectory_id)]
        rerun = set()
        if opts.audit is not None:
            rerun = sampled_trajectories(
                opts.audit, [t.trajectory_id for t in dataset.trajectories]
            )
        progress.trajectories(len(dataset.trajectories), len(dataset.trajectories) - len(todo))
        for trajectory in todo:
            runtime.begin_trajectory(trajectory.trajectory_id)
            segments = plan_trajectory(dataset, trajectory, info.capabilities.supports_import)
            progress.trajectory_started(trajectory.trajectory_id, len(segments))
            audit = None
            if opts.audit is not None:
                why_not = caching_obstacle(settings, info)
                audit = TrajectoryAudit.plan(
                    opts.audit, trajectory.trajectory_id, segments, why_not
                )
            runner = TrajectoryRunner(
                runtime,
                client,
                info,
                trajectory,
                settings,
                run.work_dir(trajectory.trajectory_id),
                on_segment=progress.segment_started,
                auditor=audit,
            )
            record = runner.run(segments)
            client = runner.client
            if audit is not None:
                client = finish_trajectory(
                    audit,
                    record,
                    rerun=trajectory.trajectory_id in rerun,
                    runtime=runtime,
                    client=client,
                    info=info,
                    trajectory=trajectory,
                    settings=settings,
                    segments=segments,
                    work_dir=run.work_dir(trajectory.trajectory_id) / "audit-restart",
                )
            run.save_trajectory(trajectory.trajectory_id, record)
            progress.trajectory_done(trajectory.trajectory_id)
    run.finish()
    try:
        report = write_report(run, dataset, opts.judge, judge, progress.judged)
    finally:
        if judge is not None:
            judge.close()
    finished = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if "audit" in report:
        run.update_manifest(finished_at=finished, audit=audit_headline(report["audit"]))
    else:
        run.update_manifest(finished_at=finished)
    return Evaluation(run.root, report)
