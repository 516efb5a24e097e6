"""Frames of a synthetic session rendered on the fly, for datasets too large to store as video.

A session spec names the generator version, preset, seed, trajectory and
session; the plan is re-simulated deterministically from them, exactly as the
writer simulated it, so the frames equal those a stored video would hold
(before compression).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from apmbench.harness.errors import DatasetError
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.suites.apmbench.synth.render import render
from apmbench.harness.suites.apmbench.synth.world import SessionPlan, apply, plan_sessions

GENERATOR = "apmbench-synth"
GENERATOR_VERSION = 3


def trajectory_rng(preset: str, seed: int, trajectory: int, purpose: str) -> random.Random:
    return random.Random(f"{GENERATOR}/{GENERATOR_VERSION}/{preset}/{seed}/{trajectory}/{purpose}")


@functools.lru_cache(maxsize=4)
def trajectory_plan(preset: str, seed: int, trajectory: int) -> tuple[SessionPlan, ...]:
    p = PRESETS[preset]
    rng = trajectory_rng(preset, seed, trajectory, "world")
    return tuple(plan_sessions(rng, p.sessions, p.session_seconds))


def session_spec(preset: str, seed: int, trajectory: int, session: int) -> dict[str, Any]:
    return {
        "generator": GENERATOR,
        "version": GENERATOR_VERSION,
        "preset": preset,
        "seed": seed,
        "trajectory": trajectory,
        "session": session,
    }


def render_frames(spec: Mapping[str, Any], times: Sequence[int]) -> Iterator[npt.NDArray[np.uint8]]:
    """The frame at each time (ms on the trajectory clock) of the session `spec` names."""
    if spec.get("generator") != GENERATOR or spec.get("version") != GENERATOR_VERSION:
        raise DatasetError(
            f"render spec {dict(spec)} needs {GENERATOR} version {GENERATOR_VERSION}: "
            "regenerate the dataset with this harness"
        )
    if spec.get("preset") not in PRESETS:
        raise DatasetError(f"render spec names unknown preset {spec.get('preset')!r}")
    plans = trajectory_plan(str(spec["preset"]), int(spec["seed"]), int(spec["trajectory"]))
    plan = plans[int(spec["session"])]
    state = plan.opening.copy()
    pending = list(plan.events)
    for t in times:
        while pending and pending[0].time_ms <= t:
            apply(state, pending.pop(0))
        second = t - (t - plan.start_ms) % 1000
        yield render(state.scene(second))
