"""Writes a synthetic benchmark to disk in the dataset format the harness reads."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from apmbench.harness.suites.apmbench.dataset import FORMAT, FORMAT_VERSION
from apmbench.harness.suites.apmbench.synth.candidates import clock
from apmbench.harness.suites.apmbench.synth.live import (
    GENERATOR,
    GENERATOR_VERSION,
    session_spec,
    trajectory_world,
)
from apmbench.harness.suites.apmbench.synth.presets import Preset
from apmbench.harness.synthetic.video import write_video


def build(preset: Preset, seed: int, out: Path) -> dict[str, int]:
    """Write the dataset for `preset` and `seed` into `out` (which must not hold one yet).

    Each trajectory has its own random streams (world and candidates), so a
    trajectory can be re-simulated alone, which live rendering relies on.
    """
    if (out / "dataset.json").exists():
        raise FileExistsError(f"{out} already holds a dataset")
    (out / "videos").mkdir(parents=True, exist_ok=True)
    (out / "candidates").mkdir(exist_ok=True)
    trajectories = []
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for i in range(preset.trajectories):
        tid = f"T{i + 1:03d}"
        plans, candidates = trajectory_world(preset.name, seed, i)
        sessions = []
        for k, plan in enumerate(plans):
            entry: dict[str, Any] = {
                "session_id": plan.session_id,
                "day_id": plan.day_id,
                "start_time": clock(plan.start_ms),
                "end_time": clock(plan.end_ms),
            }
            if preset.stored_video:
                entry["video"] = f"videos/{tid}_{plan.session_id}.mp4"
                write_video(out / entry["video"], plan, preset.video_fps)
            else:
                entry["render"] = session_spec(preset.name, seed, i, k)
            sessions.append(entry)
        trajectories.append(
            {"trajectory_id": tid, "title": f"Synthetic life {tid}", "sessions": sessions}
        )
        for candidate in candidates:
            by_task[candidate["task_type"]].append(candidate)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": f"synthetic-{preset.name}-{seed}",
        "generator": {
            "name": GENERATOR,
            "version": GENERATOR_VERSION,
            "preset": preset.name,
            "seed": seed,
        },
        "trajectories": trajectories,
    }
    (out / "dataset.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for task, items in sorted(by_task.items()):
        (out / "candidates" / f"{task}.json").write_text(json.dumps(items, indent=1) + "\n")
    return {task: len(items) for task, items in sorted(by_task.items())}
