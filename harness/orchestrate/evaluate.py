"""`apmbench-grpc evaluate`: a dataset, a system, a run directory, a report.

In three steps, so that a backend that places trajectories elsewhere (shards,
Ray) can run the middle one on its own:

- `prepare`: load the suite and dataset, start the system, check the
  settings, create (or check, when resuming) the run directory;
- `run_trajectory`: plan one trajectory, run its segments, save its record
  atomically;
- `finish`: score the finished records, complete the manifest, write report.html.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc

from apmbench.adapters.sdk.types import PROTOCOL_VERSION, SystemInfo
from apmbench.harness import __version__, logs
from apmbench.harness.media.frame_cache import Produce
from apmbench.harness.media.frame_worker import FrameWorkers
from apmbench.harness.media.frame_worker import enabled as frame_workers_enabled
from apmbench.harness.media.frames import FrameSettings
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.orchestrate.scoring import score_run, scoring_record
from apmbench.harness.orchestrate.shards import Shard, ShardRunDir, selected
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.protocol.describe import describe_info
from apmbench.harness.reports.head import RunFacts
from apmbench.harness.run import records
from apmbench.harness.run.audits.persistence import (
    caching_obstacle,
    finish_trajectory,
    sampled_trajectories,
)
from apmbench.harness.run.audits.queries import TrajectoryAudit
from apmbench.harness.run.audits.settings import AuditSettings
from apmbench.harness.run.audits.summary import audit_headline
from apmbench.harness.run.connection import Connection
from apmbench.harness.run.executor import (
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_MAX_WORK_BYTES,
    Persistence,
    RunSettings,
    TrajectoryRunner,
    check_settings,
    forks_resume,
)
from apmbench.harness.run.live import LiveSettings
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.progress_log import Progress
from apmbench.harness.run.push_cuts import PushCuts
from apmbench.harness.runtimes import Runtime, RuntimeSpec, make_runtime, resume_facts
from apmbench.harness.scoring.judge import ChatBackend, JudgeConfig, open_judge
from apmbench.harness.suites import base, datasets, suite_of_dataset, withheld
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset


@dataclass(frozen=True)
class EvaluateOptions:
    dataset: Path
    out: Path
    runtime: RuntimeSpec
    """Which system, and how it runs."""
    benchmark: str | None = None
    """The suite; None: the one the dataset names, else APM-Bench."""
    persistence: Persistence | None = None
    """None: `restart` where the runtime can restart the system, else `reset`."""
    resume: bool = False
    frames: FrameSettings = field(default_factory=FrameSettings)
    deadlines: Deadlines = field(default_factory=Deadlines)
    startup_timeout_s: float = 120.0
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    """The LLM judge of the judged tasks; `none` leaves judge-dependent numbers uncomputed."""
    audit: AuditSettings | None = None
    """Audit a sample of queries and trajectories (`--audit`); None: no audits."""
    shard: Shard | None = None
    """Run only this part's trajectories (`--shard i/N`), unscored until `merge`."""
    max_state_bytes: int | None = DEFAULT_MAX_STATE_BYTES
    """Exported state per snapshot at most (`--max-state-size`); None: no cap."""
    max_work_bytes: int | None = DEFAULT_MAX_WORK_BYTES
    """A trajectory's snapshots on disk at once at most (`--max-work-size`); None: no cap."""
    push: PushCuts = field(default_factory=PushCuts)
    """Where push calls end besides questions (random by default: sizes announce nothing)."""
    synthetic: SyntheticOrigin | None = None
    """The built-in generator's preset and seed, when the dataset is synthetic."""
    variant: str | None = None
    """One of the suite's `variants` to play the dataset in; None: the suite's own."""
    live: LiveSettings | None = None
    """`--live`: play each session on the video's clock; None: an offline replay."""
    resume_forks: bool = False
    """Forks from mid-session snapshots where the system allows (R14, `--fork-snapshots`);
    False (the default): replays, whose timing announces no question (see RunSettings)."""


@dataclass(frozen=True)
class SyntheticOrigin:
    """Where a synthetic dataset came from, for the manifest and the report."""

    preset: str
    seed: int
    seed_drawn: bool
    """True: drawn at random for this run, so no system could know the labels it implies;
    False: the user's --seed, which a system may have been tuned on."""


@dataclass(frozen=True)
class Evaluation:
    run_dir: Path
    report: RunFacts
    """report.json; empty for a run on a public part (its labels are elsewhere)."""
    manifest: Manifest
    """manifest.json as the run finished it, for whoever presents the result."""


@dataclass
class Prepared:
    """An evaluation whose system is running and whose run directory is ready."""

    opts: EvaluateOptions
    suite: OpaqueSuite
    dataset: SuiteDataset
    run: records.RunDir
    system: Connection
    """The runtime and its current start (a restart replaces the client there)."""
    settings: RunSettings
    judge: ChatBackend | None
    rerun: frozenset[str]
    """Trajectories the audit reruns in restart mode."""
    start_s: float = 0.0
    """The first start's time, launch to SERVING (the projected cost uses it)."""

    @property
    def runtime(self) -> Runtime:
        return self.system.runtime

    @property
    def info(self) -> SystemInfo:
        """What the system's Describe said."""
        return self.system.info

    def todo(self) -> list[Trajectory]:
        return [
            t
            for t in self.dataset.trajectories
            if self.run.owns(t.trajectory_id) and not self.run.is_done(t.trajectory_id)
        ]


def _host() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "grpcio": grpc.__version__,
    }


def _manifest(p: Prepared) -> dict[str, Any]:
    opts, dataset = p.opts, p.dataset
    runtime = p.runtime.describe()
    return {
        "harness_version": __version__,
        "protocol_version": PROTOCOL_VERSION,
        "benchmark": p.suite.name,
        # The harness's name for the system (the progress log's, the default directory's:
        # a command by its executable or script) beside the name its Describe gives.
        "system_name": {"harness": opts.runtime.name, "described": p.info.name},
        "system": describe_info(p.info),
        # What --resume must find unchanged of the system, as its runtime says.
        "system_spec": opts.runtime.system_spec(p.runtime),
        "runtime": runtime,
        "confinement": resume_facts(runtime),
        "dataset": {
            "name": dataset.name,
            "path": str(dataset.root.resolve()),
            "trajectories": len(dataset.trajectories),
            "sessions": sum(len(t.sessions) for t in dataset.trajectories),
            **({"synthetic": asdict(opts.synthetic)} if opts.synthetic else {}),
        },
        "dataset_hash": dataset.content_hash,
        "variant": opts.variant,
        "settings": {**p.settings.as_dict(), "deadlines_s": asdict(opts.deadlines)},
        "scoring": scoring_record(p.suite, opts.judge, p.judge, opts.variant),
        "host": _host(),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **_shard_entry(p),
    }


def _shard_entry(p: Prepared) -> dict[str, Any]:
    if p.opts.shard is None:
        return {}
    owned = [t.trajectory_id for t in p.dataset.trajectories if p.run.owns(t.trajectory_id)]
    return {"shard": {**p.opts.shard.as_dict(), "trajectories": owned}}


@contextmanager
def prepare(opts: EvaluateOptions) -> Iterator[Prepared]:
    """Start the system and ready the run directory; the system stops on leaving."""
    suite = suite_of_dataset(opts.dataset, opts.benchmark)
    datasets.check_fps(suite, opts.frames.fps)
    dataset = datasets.load(suite, opts.dataset, opts.variant)
    run = (
        records.RunDir(opts.out)
        if opts.shard is None
        else ShardRunDir(
            opts.out, opts.shard, selected(opts.shard, dataset.content_hash, dataset.trajectories)
        )
    )
    run.check_usable(opts.resume)
    # Opened before the system starts, so a judge that cannot work stops the run at once.
    judge = open_judge(opts.judge, lambda: base.reference_judge(suite, dataset.root))
    try:
        runtime = make_runtime(
            opts.runtime,
            run.runtime_dir,
            opts.deadlines,
            opts.startup_timeout_s,
            (opts.dataset, run.root),
        )
        with runtime as rt:
            started = time.monotonic()
            client = rt.start()
            start_s = time.monotonic() - started
            info = client.describe()
            persistence = opts.persistence or (
                Persistence.RESTART if rt.can_restart else Persistence.RESET
            )
            settings = RunSettings(
                persistence=persistence,
                frames=opts.frames,
                audit=asdict(opts.audit) if opts.audit is not None else None,
                max_state_bytes=opts.max_state_bytes,
                max_work_bytes=opts.max_work_bytes,
                push=opts.push,
                resume_forks=opts.resume_forks,
                live=opts.live,
            )
            check_settings(settings, info, rt)
            if persistence is Persistence.RESTART:
                rt.system_described(info.details)
                rt.expect_restarts()
            ids = [t.trajectory_id for t in dataset.trajectories]
            rerun = sampled_trajectories(opts.audit, ids) if opts.audit is not None else set()
            prepared = Prepared(
                opts, suite, dataset, run, Connection(rt, client, info), settings, judge,
                frozenset(rerun), start_s,
            )  # fmt: skip
            run.prepare(_manifest(prepared), opts.resume)
            yield prepared
    except BaseException:
        if judge is not None:
            judge.close()
        raise


def run_trajectory(
    p: Prepared, trajectory: Trajectory, progress: Progress, produce: Produce | None = None
) -> records.TrajectoryRecord:
    """Run every segment of one trajectory and save its record atomically."""
    tid = trajectory.trajectory_id
    p.runtime.begin_trajectory(tid)
    segments = p.suite.plan(p.dataset, trajectory, p.info.capabilities.supports_import)
    progress.trajectory_started(tid, len(segments))
    audit = None
    if p.opts.audit is not None:
        why_not = caching_obstacle(p.settings, p.info)
        audit = TrajectoryAudit.plan(p.opts.audit, tid, segments, why_not)
    runner = TrajectoryRunner(
        p.system,
        trajectory,
        p.settings,
        p.run.work_dir(tid),
        on_segment=progress.segment_started,
        auditor=audit,
        produce=produce,
    )
    record = runner.run(segments)
    if audit is not None:
        finish_trajectory(
            audit,
            record,
            rerun=tid in p.rerun,
            system=p.system,
            trajectory=trajectory,
            settings=p.settings,
            segments=segments,
            work_dir=p.run.work_dir(tid) / "audit-restart",
        )
    p.run.save_trajectory(tid, record)
    progress.trajectory_done(tid)
    return record


def isolation(p: Prepared) -> dict[str, Any]:
    """What kept later data away from each answer, and how far past its question a process
    had been shown at worst (0 in restart mode: every segment starts a fresh process)."""
    worst = max(
        (
            p.run.load_trajectory(t.trajectory_id).get("max_lookahead_s", 0.0)
            for t in p.dataset.trajectories
            if p.run.owns(t.trajectory_id)
        ),
        default=0.0,
    )
    restart = p.settings.persistence is Persistence.RESTART
    return {
        "max_lookahead_s": worst,
        "fresh_process_per_segment": restart,
        "rests_on_system_reset": not restart,
        # R14: a fork starts in a fresh process from the main pass's snapshot taken just
        # before its first turn, or replays its first session from the start.
        "forks_start": (
            "mid-session snapshot" if forks_resume(p.settings, p.info) else "session replay"
        ),
    }


def finish(p: Prepared, progress: Progress) -> Evaluation:
    """Score the finished records and complete the manifest."""
    p.run.finish()
    p.run.update_manifest(isolation=isolation(p))
    if p.opts.shard is not None:  # scored once, by `merge`, from all the parts
        if p.judge is not None:
            p.judge.close()
        done = p.run.update_manifest(
            finished_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        )
        return Evaluation(p.run.root, {}, done)
    if withheld.is_public(p.dataset.root):  # no labels here: predictions, scored elsewhere
        from apmbench.harness.orchestrate.blind import write_predictions

        if p.judge is not None:
            p.judge.close()
        write_predictions(p.run, p.suite, p.dataset)
        done = p.run.update_manifest(
            finished_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        )
        return Evaluation(p.run.root, {}, done)
    try:
        report = score_run(p.run, p.suite, p.dataset, p.opts.judge, p.judge, progress.judged)
    finally:
        if p.judge is not None:
            p.judge.close()
    finished = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if "audit" in report:
        done = p.run.update_manifest(finished_at=finished, audit=audit_headline(report["audit"]))
    else:
        done = p.run.update_manifest(finished_at=finished)
    from apmbench.harness.orchestrate.html.view import VIEW_NAME, write_view

    write_view([p.run.root], p.run.root / VIEW_NAME)
    return Evaluation(p.run.root, report, done)


def _say_cost(p: Prepared, todo: list[Trajectory]) -> None:
    """The projected cost, before the first trajectory (stderr's progress log), with the
    settings that would cut it."""
    from apmbench.harness.orchestrate.cost import project

    cost = project(
        p.suite, p.dataset, todo, p.settings.persistence,
        p.info.capabilities.supports_import, p.opts.frames.fps, p.start_s,
        bool(getattr(p.runtime, "spare", False)), p.settings.push.decoys,
    )  # fmt: skip
    log = logs.get("evaluate")
    log.info(
        "projected cost",
        trajectories=cost.trajectories,
        starts=cost.starts,
        frames=cost.frames,
        queries=cost.queries,
        start_s=round(cost.start_s, 2),
        starts_s=round(cost.start_total_s, 1),
        spares=cost.spare,
    )
    for advice in cost.advice(p.settings.persistence):
        log.info("to cut it", advice=advice)


def evaluate(opts: EvaluateOptions, progress: Progress | None = None) -> Evaluation:
    progress = progress or Progress()
    with prepare(opts) as p:
        todo = p.todo()
        total = len(p.dataset.trajectories)
        _say_cost(p, todo)
        progress.trajectories(total, total - len(todo))
        # Frames rendered or decoded in worker processes, on the cores the harness's own
        # interpreter leaves (harness/media/frame_worker.py).
        with FrameWorkers() as workers:
            produce = workers.produce if frame_workers_enabled() else None
            for trajectory in todo:
                run_trajectory(p, trajectory, progress, produce)
    return finish(p, progress)
