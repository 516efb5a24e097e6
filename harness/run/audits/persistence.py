"""The persistence audit: a sampled trajectory run again in `restart` mode, answers compared.

In `reset` or `trust` mode a process could carry memory it never exported
across the gaps between sessions. Rerunning the trajectory with a fresh
process before every session (only exported state crosses) and comparing
each answer with the run's own shows whether any answer depended on such
hidden memory (or on chance: a system that answers non-deterministically
differs too, and the record says so). A run made in `restart` mode needs no
such audit: its numbers already come from exported state alone.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from apmbench.adapters.sdk.types import SystemInfo
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.audits.queries import TrajectoryAudit
from apmbench.harness.run.audits.settings import AuditSettings
from apmbench.harness.run.connection import Connection
from apmbench.harness.run.executor import Persistence, RunSettings, TrajectoryRunner
from apmbench.harness.run.plan import Segment
from apmbench.harness.run.records import TrajectoryRecord
from apmbench.harness.runtimes.base import Runtime

ANSWER_FIELDS = ("answer", "decision")


def sampled_trajectories(settings: AuditSettings, trajectory_ids: Sequence[str]) -> set[str]:
    rng = random.Random(hashlib.sha256(f"{settings.seed}/persistence".encode()).hexdigest())
    ids = sorted(trajectory_ids)
    return set(rng.sample(ids, min(settings.persistence_trajectories, len(ids))))


def caching_obstacle(settings: RunSettings, info: SystemInfo) -> str:
    """Why the caching audit cannot run with these settings ("" when it can)."""

    if settings.persistence is Persistence.TRUST:
        return (
            "persistence trust: repeating a question would replace the memory the run trusts "
            "the process to keep"
        )
    if not info.capabilities.supports_import:
        return "the system cannot import the snapshot a repeat starts from"
    return ""


def _why_not(settings: RunSettings, runtime: Runtime, info: SystemInfo) -> str:

    if settings.persistence is Persistence.RESTART:
        return "the run used restart persistence: only exported state crossed a gap"
    if not runtime.can_restart:
        return f"the {runtime.kind} runtime cannot restart the system"
    if not info.capabilities.supports_import:
        return "the system cannot import state, so it cannot run in restart mode"
    return ""


def compare_answers(main: TrajectoryRecord, rerun: TrajectoryRecord) -> dict[str, Any]:
    """Each instance's parsed answer (and raw text) in the run's mode and in restart mode:
    scoring calls it on both runs' graded rows (the run records raw answers only)."""
    redone = {r["instance_id"]: r for r in rerun["instances"]}
    differing = []
    same_text = 0
    for row in main["instances"]:
        other = redone.get(row["instance_id"])
        if other is None:
            differing.append({"instance_id": row["instance_id"], "problem": "not asked again"})
            continue
        same_text += row["raw_output"] == other["raw_output"]
        ours = {k: row.get(k) for k in ANSWER_FIELDS}
        theirs = {k: other.get(k) for k in ANSWER_FIELDS}
        if ours != theirs:
            differing.append({"instance_id": row["instance_id"], "run": ours, "restart": theirs})
    return {"instances": len(main["instances"]), "same_text": same_text, "differing": differing}


def finish_trajectory(
    audit: TrajectoryAudit,
    record: TrajectoryRecord,
    *,
    rerun: bool,
    system: Connection,
    trajectory: Trajectory,
    settings: RunSettings,
    segments: list[Segment],
    work_dir: Path,
) -> None:
    """Put the trajectory's audit into `record`, rerunning it in restart mode when sampled
    (the rerun restarts the system: `system` holds the start to go on with)."""
    entry = audit.record()
    why_not = _why_not(settings, system.runtime, system.info)
    if not rerun:
        entry["persistence"] = {"status": "not_sampled"}
    elif why_not:
        entry["persistence"] = {"status": "not_run", "reason": why_not}
    else:
        restart = replace(settings, persistence=Persistence.RESTART)
        work_dir.mkdir(parents=True, exist_ok=True)
        again = TrajectoryRunner(system, trajectory, restart, work_dir).run(segments)
        # The rerun's raw records: scoring grades them beside the run's and compares.
        entry["persistence"] = {
            "status": "compared",
            "mode": "restart",
            "compared_with": settings.persistence.value,
            "rerun": again["instances"],
        }
    record["audit"] = entry
