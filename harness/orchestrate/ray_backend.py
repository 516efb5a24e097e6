"""`evaluate --backend ray`: one Ray task per trajectory, merged on the driver.

Ray places the tasks; the harness does not schedule. Each task runs the
harness's own runner on its node, as `evaluate --shard` with that single
trajectory, into its own part directory (RUN.parts/<trajectory>/, which must
be on storage the driver can read: the same machine, or a shared file
system). A task whose worker or node dies is retried by Ray and starts the
trajectory from scratch: the part directory is emptied first, and the
Docker runtime, which names containers per run directory and trajectory,
removes the dead attempt's container before starting (on the same host). The
driver shows progress as tasks finish, then merges the parts into RUN exactly
as `apmbench-grpc merge` does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
from dataclasses import replace
from pathlib import Path

from apmbench.harness.errors import ConfigError, RunDirError
from apmbench.harness.orchestrate.evaluate import Evaluation, evaluate
from apmbench.harness.orchestrate.merge import merge
from apmbench.harness.orchestrate.resolve import Resolved, resolve
from apmbench.harness.orchestrate.settings import EvaluateOptions
from apmbench.harness.orchestrate.shards import Shard, parts_dir
from apmbench.harness.run import records
from apmbench.harness.run.manifest import load as load_manifest
from apmbench.harness.run.progress_log import Progress

ATTEMPT_FILE = Path("logs") / "attempt.json"
"""In each part directory: the worker (host, pid) running the current attempt."""


def run_one(opts: EvaluateOptions, trajectory_id: str, index: int, count: int) -> str:
    """The body of one Ray task: the trajectory from scratch into its part directory
    (`opts` resolved by `evaluate_ray`)."""
    assert opts.out is not None
    part = parts_dir(opts.out) / trajectory_id
    attempts = 0
    previous = part / ATTEMPT_FILE
    if previous.is_file():
        attempts = int(json.loads(previous.read_text()).get("attempt", 0))
    # A retry after a dead worker: what the dead attempt wrote is discarded, not resumed.
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    shard = Shard(index, count, only=(trajectory_id,))
    info = {"attempt": attempts + 1, "host": socket.gethostname(), "pid": os.getpid()}
    (part / ATTEMPT_FILE).parent.mkdir()
    (part / ATTEMPT_FILE).write_text(json.dumps(info))
    evaluate(replace(opts, out=part, shard=shard, resume=False))
    return trajectory_id


def check_ray_options(shard: Shard | None) -> None:
    """What `--backend ray` needs: Ray installed, and no `--shard` (the command checks it
    before preparing a dataset, `evaluate_ray` for callers that skip the command)."""
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(
            "--backend ray needs Ray: pip install 'apmbench-grpc[ray]' (or pip install ray)"
        )
    if shard is not None:
        raise ConfigError("--backend ray places every trajectory itself: drop --shard")


def evaluate_ray(
    target: EvaluateOptions | Resolved,
    address: str | None,
    progress: Progress | None = None,
    gpus_per_task: float = 0.0,
    max_retries: int = 3,
) -> Evaluation:
    """Run every trajectory as a Ray task on the cluster at `address` (None: a local one)."""
    check_ray_options(target.options.shard if isinstance(target, Resolved) else target.shard)
    import ray

    progress = progress or Progress()
    # Resolved once here (or by the caller): every task gets the same dataset, seed and
    # judge, and loads the dataset in its own process.
    resolved = target if isinstance(target, Resolved) else resolve(target)
    opts, out, dataset = resolved.options, resolved.out, resolved.dataset
    if out.exists() and any(out.iterdir()):
        raise RunDirError(f"{out} exists and is not empty: choose another --out")
    parts = parts_dir(out)
    if parts.exists() and not opts.resume:
        raise RunDirError(
            f"{parts} holds the parts of an earlier Ray run: pass --resume to keep its "
            "finished trajectories, or remove it"
        )
    ids = [t.trajectory_id for t in dataset.trajectories]
    done = {tid for tid in ids if (parts / tid / "shards").is_dir() and _finished(parts / tid)}
    progress.trajectories(len(ids), len(done))
    context: dict[str, object] = {"address": address} if address else {}
    ray.init(**context, log_to_driver=False, configure_logging=False)
    try:
        task = ray.remote(num_gpus=gpus_per_task, num_cpus=1, max_retries=max_retries)(run_one)
        pending = {
            task.remote(opts, tid, k, len(ids)): tid for k, tid in enumerate(ids) if tid not in done
        }
        for tid in pending.values():
            progress.trajectory_started(tid, 0)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                ray.get(ref)  # re-raises a task's error (after its retries)
                progress.trajectory_done(pending.pop(ref))
    finally:
        ray.shutdown()
    report = merge([parts / tid for tid in ids], out)
    # Which attempt of each task finished, where: a retried trajectory shows attempt > 1.
    tasks = {tid: json.loads((parts / tid / ATTEMPT_FILE).read_text()) for tid in ids}
    finished = records.RunDir(out).update_manifest(ray={"tasks": tasks, "max_retries": max_retries})
    shutil.rmtree(parts, ignore_errors=True)
    predictions = out / "predictions.json"  # a public part's: merge wrote it, unscored
    return Evaluation(out, report, finished, predictions if predictions.is_file() else None)


def _finished(part: Path) -> bool:
    manifests = list((part / "shards").glob("*.json"))
    return bool(manifests) and all(load_manifest(m).records("finished_at") for m in manifests)


def finished_parts(out: Path) -> int | None:
    """How many trajectories an earlier Ray run into `out` finished (kept in its parts
    directory for --resume); None: no Ray run left parts there."""
    parts = parts_dir(out)
    if not parts.is_dir():
        return None
    return sum(1 for part in parts.iterdir() if (part / "shards").is_dir() and _finished(part))
