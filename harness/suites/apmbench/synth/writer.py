"""Writes a synthetic benchmark to disk in the dataset format the harness reads."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import av

from apmbench.adapters.perception import layout
from apmbench.harness.suites.apmbench.dataset import FORMAT, FORMAT_VERSION
from apmbench.harness.suites.apmbench.synth.candidates import clock
from apmbench.harness.suites.apmbench.synth.live import (
    GENERATOR,
    GENERATOR_VERSION,
    session_spec,
    trajectory_world,
)
from apmbench.harness.suites.apmbench.synth.presets import Preset
from apmbench.harness.suites.apmbench.synth.render import render
from apmbench.harness.suites.apmbench.synth.world import SessionPlan, apply


def write_video(path: Path, plan: SessionPlan, fps: int) -> None:
    """H.264 at `fps` with a GOP of exactly one second, so 1-FPS sampling needs key frames only."""
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height = layout.WIDTH, layout.HEIGHT
        stream.pix_fmt = "yuv420p"
        stream.options = {
            "g": str(fps),
            "keyint_min": str(fps),
            "sc_threshold": "0",
            "preset": "veryfast",
            "crf": "23",
            "bf": "0",
        }
        state = plan.opening.copy()
        events = list(plan.events)
        for second in range(plan.seconds):
            now = plan.start_ms + second * 1000
            while events and events[0].time_ms <= now:
                apply(state, events.pop(0))
            image = render(state.scene(now))
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            for _ in range(fps):
                for packet in stream.encode(frame):
                    out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


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
