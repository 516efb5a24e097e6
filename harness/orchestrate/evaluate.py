"""`apmbench-grpc evaluate` as one pipeline of typed stages.

    resolve -> start -> play (each trajectory) -> score -> report

- `resolve(EvaluateOptions) -> Resolved` (orchestrate/resolve.py): the dataset, suite,
  variant, judge and run directory decided, the dataset loaded;
- `start(Resolved) -> Started`, a context manager (the system stops on leaving): the
  judge opened, the system started and described, the play stage's settings fixed and
  checked against it, the run directory created (or checked, when resuming);
- `play(Started, Trajectory, Progress) -> TrajectoryRecord`: one trajectory's segments,
  its record saved atomically. A backend that places trajectories elsewhere (shards,
  Ray) runs a shard of the pipeline per part;
- `score(Started, Progress) -> Scored`: the isolation the records show written, every
  answer graded once, judged, report.json and report.md written (a shard: nothing,
  scored by `merge`; a public part: predictions.json);
- `report(Started, Scored) -> Evaluation`: the manifest finished, report.html written.

`evaluate(options)` runs them all; `run(resolved)` all but the first. Each stage takes
and returns a typed record. The manifest is written by the stage that owns each part of
it: start the run's identity (system, runtime, dataset, settings, host, and the judge it
was asked for, which `merge` and `score RUN_DIR` judge with), score the isolation the
records show and the scoring entry with what judging cost, report the end. Scoring reads
the run directory rather than the records in memory because `apmbench-grpc score
RUN_DIR` must give the same report from the directory alone.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc

from apmbench.adapters.sdk.types import PROTOCOL_VERSION, SystemInfo
from apmbench.harness import __version__, logs
from apmbench.harness.media.frame_cache import Produce
from apmbench.harness.media.frame_worker import FrameWorkers
from apmbench.harness.media.frame_worker import enabled as frame_workers_enabled
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.orchestrate.resolve import Resolved, resolve
from apmbench.harness.orchestrate.scoring import score_run, scoring_record
from apmbench.harness.orchestrate.settings import EvaluateOptions, SyntheticOrigin
from apmbench.harness.orchestrate.shards import ShardRunDir, selected
from apmbench.harness.protocol.describe import describe_info
from apmbench.harness.reports.head import RunFacts
from apmbench.harness.run import records
from apmbench.harness.run.audits.persistence import (
    caching_obstacle,
    finish_trajectory,
    sampled_trajectories,
)
from apmbench.harness.run.audits.queries import TrajectoryAudit
from apmbench.harness.run.audits.summary import audit_headline
from apmbench.harness.run.connection import Connection
from apmbench.harness.run.executor import (
    Persistence,
    RunSettings,
    TrajectoryRunner,
    check_settings,
    forks_resume,
)
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.progress_log import Progress
from apmbench.harness.runtimes import Runtime, make_runtime, resume_facts
from apmbench.harness.scoring.judge import ChatBackend, open_judge
from apmbench.harness.suites import base, withheld
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset


@dataclass(frozen=True)
class Evaluation:
    run_dir: Path
    report: RunFacts
    """report.json; empty for a shard and for a run on a public part (its labels are
    elsewhere)."""
    manifest: Manifest
    """manifest.json as the run finished it, for whoever presents the result."""
    predictions: Path | None = None
    """A run on a public part: its predictions.json, to be scored where the labels are."""


@dataclass
class Started:
    """The start stage's result: the system running, the run directory ready."""

    resolved: Resolved
    run: records.RunDir
    system: Connection
    """The runtime and its current start (a restart replaces the client there)."""
    settings: RunSettings
    """What the play stage runs by: the options' playing part, with the persistence the
    runtime allows."""
    judge: ChatBackend | None
    rerun: frozenset[str]
    """Trajectories the audit reruns in restart mode."""
    start_s: float = 0.0
    """The first start's time, launch to SERVING (the projected cost uses it)."""

    @property
    def options(self) -> EvaluateOptions:
        return self.resolved.options

    @property
    def suite(self) -> OpaqueSuite:
        return self.resolved.suite

    @property
    def dataset(self) -> SuiteDataset:
        return self.resolved.dataset

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


@dataclass(frozen=True)
class Scored:
    """The score stage's result."""

    report: RunFacts
    """report.json; empty when this run is not scored here (a shard, a public part)."""
    predictions: Path | None = None
    """A public part's predictions.json, to be scored where the labels are."""


def _host() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "grpcio": grpc.__version__,
    }


def _manifest(p: Started) -> dict[str, Any]:
    """The manifest's identity part, which the start stage owns."""
    opts, dataset = p.options, p.dataset
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
        "started_at": _now(),
        **_shard_entry(p),
    }


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _shard_entry(p: Started) -> dict[str, Any]:
    if p.options.shard is None:
        return {}
    owned = [t.trajectory_id for t in p.dataset.trajectories if p.run.owns(t.trajectory_id)]
    return {"shard": {**p.options.shard.as_dict(), "trajectories": owned}}


def _play_settings(opts: EvaluateOptions, persistence: Persistence) -> RunSettings:
    """The play stage's part of the options, with the persistence the runtime allows: the
    runner's own record (harness/run/ is below orchestrate/ and cannot read the options)."""
    return RunSettings(
        persistence=persistence,
        frames=opts.frames,
        audit=asdict(opts.audit) if opts.audit is not None else None,
        max_state_bytes=opts.max_state_bytes,
        max_work_bytes=opts.max_work_bytes,
        push=opts.push,
        resume_forks=opts.resume_forks,
        live=opts.live,
    )


def _run_dir(r: Resolved) -> records.RunDir:
    shard = r.options.shard
    if shard is None:
        return records.RunDir(r.out)
    owned = selected(shard, r.dataset.content_hash, r.dataset.trajectories)
    return ShardRunDir(r.out, shard, owned)


@contextmanager
def start(r: Resolved) -> Iterator[Started]:
    """Start the system and ready the run directory; the system stops on leaving."""
    opts = r.options
    run = _run_dir(r)
    run.check_usable(opts.resume)
    # Opened before the system starts, so a judge that cannot work stops the run at once.
    judge = open_judge(opts.judge, lambda: base.reference_judge(r.suite, r.dataset.root))
    try:
        assert opts.dataset is not None  # resolved
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
            settings = _play_settings(opts, persistence)
            check_settings(settings, info, rt)
            if persistence is Persistence.RESTART:
                rt.system_described(info.details)
                rt.expect_restarts()
            ids = [t.trajectory_id for t in r.dataset.trajectories]
            rerun = sampled_trajectories(opts.audit, ids) if opts.audit is not None else set()
            p = Started(
                r, run, Connection(rt, client, info), settings, judge, frozenset(rerun), start_s
            )
            run.prepare(_manifest(p), opts.resume)
            yield p
    except BaseException:
        if judge is not None:
            judge.close()
        raise


def play(
    p: Started, trajectory: Trajectory, progress: Progress, produce: Produce | None = None
) -> records.TrajectoryRecord:
    """Run every segment of one trajectory and save its record atomically."""
    tid = trajectory.trajectory_id
    p.runtime.begin_trajectory(tid)
    segments = p.suite.plan(p.dataset, trajectory, p.info.capabilities.supports_import)
    progress.trajectory_started(tid, len(segments))
    audit = None
    if p.options.audit is not None:
        why_not = caching_obstacle(p.settings, p.info)
        audit = TrajectoryAudit.plan(p.options.audit, tid, segments, why_not)
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


def isolation(p: Started) -> dict[str, Any]:
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


def score(p: Started, progress: Progress) -> Scored:
    """Close the run's records, write what they show of isolation, and grade them once
    (judging where the suite judges); the judge is closed on leaving."""
    try:
        p.run.finish()
        p.run.update_manifest(isolation=isolation(p))
        if p.options.shard is not None:  # scored once, by `merge`, from all the parts
            return Scored({})
        if withheld.is_public(p.dataset.root):  # no labels here: scored elsewhere
            from apmbench.harness.orchestrate.blind import write_predictions

            return Scored({}, write_predictions(p.run, p.suite, p.dataset))
        return Scored(
            score_run(p.run, p.suite, p.dataset, p.options.judge, p.judge, progress.judged)
        )
    finally:
        if p.judge is not None:
            p.judge.close()


def report(p: Started, scored: Scored) -> Evaluation:
    """Finish the manifest and, for a scored run, write report.html."""
    if not scored.report:
        done = p.run.update_manifest(finished_at=_now())
        return Evaluation(p.run.root, {}, done, scored.predictions)
    if "audit" in scored.report:
        audit = audit_headline(scored.report["audit"])
        done = p.run.update_manifest(finished_at=_now(), audit=audit)
    else:
        done = p.run.update_manifest(finished_at=_now())
    from apmbench.harness.orchestrate.html.view import VIEW_NAME, write_view

    write_view([p.run.root], p.run.root / VIEW_NAME)
    return Evaluation(p.run.root, scored.report, done)


def _say_cost(p: Started, todo: list[Trajectory]) -> None:
    """The projected cost, before the first trajectory (stderr's progress log), with the
    settings that would cut it."""
    from apmbench.harness.orchestrate.cost import project

    cost = project(
        p.suite, p.dataset, todo, p.settings.persistence,
        p.info.capabilities.supports_import, p.options.frames.fps, p.start_s,
        bool(getattr(p.runtime, "spare", False)), p.settings.push.decoys,
        p.runtime.later_start_s(p.start_s),
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
        **({} if cost.later_start_s is None else {"later_start_s": round(cost.later_start_s, 2)}),
        spares=cost.spare,
    )
    for advice in cost.advice(p.settings.persistence):
        log.info("to cut it", advice=advice)


def evaluate(opts: EvaluateOptions, progress: Progress | None = None) -> Evaluation:
    """The whole pipeline: resolve, start, play every trajectory left, score, report."""
    return run(resolve(opts), progress)


def run(resolved: Resolved, progress: Progress | None = None) -> Evaluation:
    """The pipeline after the resolve stage (the command resolves once for every system)."""
    progress = progress or Progress()
    with start(resolved) as p:
        todo = p.todo()
        total = len(p.dataset.trajectories)
        _say_cost(p, todo)
        progress.trajectories(total, total - len(todo))
        # Frames rendered or decoded in worker processes, on the cores the harness's own
        # interpreter leaves (harness/media/frame_worker.py).
        with FrameWorkers() as workers:
            produce = workers.produce if frame_workers_enabled() else None
            for trajectory in todo:
                play(p, trajectory, progress, produce)
    # The system has stopped (its memory and the GPU it used free) before the judge works
    # (a local judge model was loaded at start, to fail early, and waits on its device).
    return report(p, score(p, progress))


__all__ = [
    "EvaluateOptions",
    "Evaluation",
    "Resolved",
    "Scored",
    "Started",
    "SyntheticOrigin",
    "evaluate",
    "play",
    "report",
    "resolve",
    "run",
    "score",
    "start",
]
