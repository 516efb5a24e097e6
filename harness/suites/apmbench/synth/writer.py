"""Writes a synthetic benchmark to disk in the dataset format the harness reads."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from apmbench.harness.media.timecode import MS_PER_DAY
from apmbench.harness.suites.apmbench.dataset import FORMAT, FORMAT_VERSION
from apmbench.harness.suites.apmbench.synth.candidates import clock
from apmbench.harness.suites.apmbench.synth.live import (
    GENERATOR,
    GENERATOR_VERSION,
    intervening_spec,
    session_spec,
    trajectory_world,
)
from apmbench.harness.suites.apmbench.synth.presets import Preset
from apmbench.harness.synthetic.video import write_video
from apmbench.harness.synthetic.world import SessionPlan

INTERVENING_AFTER_MS = 60_000
"""A recording between sessions starts this long after the session before it ends."""


def intervening(
    preset: str, seed: int, trajectory: int, plans: Sequence[SessionPlan]
) -> list[dict[str, object]]:
    """The video recorded between the selected sessions, for the Raw Lifelong organisation
    (appendix B.6): after each session but the last, a recording as long as that session,
    when the gap holds it on the same day. It shows the wearer in transit, nowhere the world
    keeps anything, so no label changes."""
    out: list[dict[str, object]] = []
    for k, (before, after) in enumerate(itertools.pairwise(plans)):
        start = before.end_ms + INTERVENING_AFTER_MS
        end = start + before.seconds * 1000
        if end + INTERVENING_AFTER_MS > after.start_ms or end // MS_PER_DAY != start // MS_PER_DAY:
            continue
        out.append(
            {
                "session_id": f"R{k + 1:03d}",
                "day_id": before.day_id,
                "start_time": clock(start),
                "end_time": clock(end),
                "render": intervening_spec(preset, seed, trajectory, k),
            }
        )
    return out


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
    by_task: dict[str, list[dict[str, object]]] = defaultdict(list)
    for i in range(preset.trajectories):
        tid = f"T{i + 1:03d}"
        plans, candidates = trajectory_world(preset.name, seed, i)
        sessions = []
        for k, plan in enumerate(plans):
            entry: dict[str, object] = {
                "session_id": plan.session_id,
                "day_id": plan.day_id,
                "start_time": clock(plan.start_ms),
                "end_time": clock(plan.end_ms),
            }
            if preset.stored_video:
                video = f"videos/{tid}_{plan.session_id}.mp4"
                entry["video"] = video
                write_video(out / video, plan, preset.video_fps)
            else:
                entry["render"] = session_spec(preset.name, seed, i, k)
            sessions.append(entry)
        trajectories.append(
            {
                "trajectory_id": tid,
                "title": f"Synthetic life {tid}",
                "sessions": sessions,
                "intervening": intervening(preset.name, seed, i, plans),
            }
        )
        for candidate in candidates:
            by_task[candidate["task_type"]].append(candidate)
    manifest: dict[str, object] = {
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
