"""Frames of a synthetic session rendered on the fly, for datasets too large to store as video.

A session spec names the generator version, preset, seed, trajectory and
session; the plan is re-simulated deterministically from them, exactly as the
writer simulated it, so the frames equal those a stored video would hold
(before compression).
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NotRequired, TypedDict, cast

from apmbench.adapters.perception.layout import SLOTS, Scene, SlotView
from apmbench.harness.errors import DatasetError
from apmbench.harness.json_types import JSON
from apmbench.harness.media.patched import Patched
from apmbench.harness.media.timecode import format_ms
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.synth.candidates import Candidate, TrajectoryFacts, generate
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.synthetic.render import render_patched
from apmbench.harness.synthetic.world import SessionPlan, apply, plan_sessions

GENERATOR = "apmbench-synth"
# 4: decision probe times, intervals, EA questions and CT options drawn independently of
# the label; every trajectory covers every task.
# 5: a fair coin decides whether an RCR, MPA, PRM or TPG candidate's positive probe comes
# before its negative (it came first in about 60 % of RCR and TPG candidates).
# 6: earlier questions and options say nothing about a later answer. On generator 5 a
# frame-blind memory of every option (tests/helpers/option_memory.py) answered ER 60.8 % and
# EST 45.8 % of seeds 100-109 of `small` (chance 25 %), since options named the trajectory's
# real put-downs and later acts, mixed kinds, and changed when a question came again. Now ER
# distractors are objects put down before the question; ACR asks about toggles and counts
# with distractors the layout allows where the wearer stands; TR orders toggles or counts of
# the first two sessions, one kind a question; STU answers with objects only; OCR's
# distractors are the other screens; a question asked again with the same answer gets the
# same options (tests/unit/test_option_memory.py).
GENERATOR_VERSION = 6
ATTEMPTS = 1000
"""Lives drawn before a trajectory is given up. The paper preset's T005 first covers every
task at attempt 228 (under 200, `--synthetic paper` could not be generated); a trajectory
that covered earlier draws the same life as before."""


def trajectory_rng(preset: str, seed: int, trajectory: int, purpose: str) -> random.Random:
    return random.Random(f"{GENERATOR}/{GENERATOR_VERSION}/{preset}/{seed}/{trajectory}/{purpose}")


def covers_everything(candidates: Sequence[Candidate]) -> bool:
    """Every task has a candidate and EA has both labels: otherwise a family has no score."""
    present = {c["task_type"] for c in candidates}
    labels = {c["evidence_available"] for c in candidates if c["task_type"] == "EA"}
    return set(tasks.ALL_TASKS) <= present and labels == {True, False}


World = tuple[tuple[SessionPlan, ...], tuple[Candidate, ...]]


def _attempt(preset: str, seed: int, trajectory: int, attempt: int) -> World | None:
    """The simulated life drawn at `attempt`, or None when it lacks a task."""
    p = PRESETS[preset]
    plans = _plans(preset, seed, trajectory, attempt)
    facts = TrajectoryFacts(f"T{trajectory + 1:03d}", list(plans))
    candidates = generate(
        facts, _attempt_rng(preset, seed, trajectory, "candidates", attempt), p.per_task
    )
    return (plans, tuple(candidates)) if covers_everything(candidates) else None


def _plans(preset: str, seed: int, trajectory: int, attempt: int) -> tuple[SessionPlan, ...]:
    """The sessions of the life drawn at `attempt` (a tenth of drawing its candidates)."""
    p = PRESETS[preset]
    rng = _attempt_rng(preset, seed, trajectory, "world", attempt)
    return tuple(plan_sessions(rng, p.sessions, p.session_seconds))


def _attempt_rng(
    preset: str, seed: int, trajectory: int, purpose: str, attempt: int
) -> random.Random:
    """The random stream `purpose` draws from at `attempt` (attempt 0: the plain stream)."""
    suffix = f"/{attempt}" if attempt else ""
    return trajectory_rng(preset, seed, trajectory, purpose + suffix)


@functools.cache
def _source_digest() -> str:
    """What the simulation's outcome depends on besides its arguments: its code."""
    from apmbench.harness.suites.apmbench.synth import candidates, presets
    from apmbench.harness.synthetic import world

    digest = hashlib.sha256()
    for module in (candidates, presets, world, sys.modules[__name__]):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


def _attempt_path(preset: str, seed: int, trajectory: int) -> Path:
    from apmbench.harness.paths import cache_root

    name = f"{preset}-seed{seed}-t{trajectory}"
    return cache_root() / "synthetic" / "worlds" / f"v{GENERATOR_VERSION}-{_source_digest()}" / name


def _seal(preset: str, seed: int, trajectory: int, attempt: int) -> str:
    """What a record holds beside its attempt once that life was checked to cover every
    task, so that rendering can trust it without drawing the candidates again; a record
    without it (planted, damaged, an older format) is checked as before."""
    key = f"{_source_digest()}/{preset}/{seed}/{trajectory}/{attempt}/covers every task"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _recorded_attempt(preset: str, seed: int, trajectory: int) -> tuple[int, bool] | None:
    """The recorded attempt, and whether its record is sealed; None without one."""
    try:
        text = _attempt_path(preset, seed, trajectory).read_text().split()
        attempt = int(text[0])
    except (OSError, ValueError, IndexError):
        return None
    if not 0 <= attempt < ATTEMPTS:
        return None
    sealed = text[1:] == [_seal(preset, seed, trajectory, attempt)]
    return attempt, sealed


def _record_attempt(preset: str, seed: int, trajectory: int, attempt: int) -> None:
    path = _attempt_path(preset, seed, trajectory)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(f"{attempt} {_seal(preset, seed, trajectory, attempt)}")
        os.replace(tmp, path)  # shards rendering the same trajectory race harmlessly
    except OSError:
        pass  # a read-only cache only costs the search again


# Every trajectory of a paper-scale run (104; about 40 KB each): the report's thumbnails
# draw from the same worlds right after the run, which a handful would simulate again.
@functools.lru_cache(maxsize=256)
def trajectory_world(preset: str, seed: int, trajectory: int) -> World:
    """The sessions and candidates of one trajectory. A simulated life that does not allow
    a candidate of every task is drawn again from the next random stream, deterministically,
    so that live rendering re-simulates exactly what the writer wrote.

    Finding the first life that covers every task takes dozens of simulations (about 4 s
    of CPU per paper trajectory, more than rendering its main pass); the attempt found is
    recorded in the cache, keyed by the generator's code, so that rendering the trajectory
    again (every run of every system) simulates that one life only, and checks it covers."""
    known = _recorded_attempt(preset, seed, trajectory)
    if known is not None:
        attempt, sealed = known
        world = _attempt(preset, seed, trajectory, attempt)
        if world is not None:
            if not sealed:
                _record_attempt(preset, seed, trajectory, attempt)
            return world
    for attempt in range(ATTEMPTS):
        world = _attempt(preset, seed, trajectory, attempt)
        if world is not None:
            _record_attempt(preset, seed, trajectory, attempt)
            return world
    raise DatasetError(
        f"preset {preset!r} seed {seed}: trajectory {trajectory + 1} has no candidate of some "
        f"task after {ATTEMPTS} simulated lives; its sessions are too short for every task"
    )


@functools.lru_cache(maxsize=256)
def trajectory_plan(preset: str, seed: int, trajectory: int) -> tuple[SessionPlan, ...]:
    """The sessions of `trajectory_world`: what rendering needs. With a sealed record the
    life's sessions are simulated without its candidates, which are nine tenths of the
    cost (a frame worker renders every trajectory of a run, and the report's thumbnails
    all of them again)."""
    known = _recorded_attempt(preset, seed, trajectory)
    if known is not None and known[1]:
        return _plans(preset, seed, trajectory, known[0])
    return trajectory_world(preset, seed, trajectory)[0]


class SessionSpec(TypedDict):
    """A synthetic session's `render` in dataset.json: which simulated session to draw."""

    generator: str
    version: int
    preset: str
    seed: int
    trajectory: int
    session: int
    intervening: NotRequired[bool]
    """Present (True) for the recording after `session` (`intervening_spec`)."""


def session_spec(preset: str, seed: int, trajectory: int, session: int) -> SessionSpec:
    return {
        "generator": GENERATOR,
        "version": GENERATOR_VERSION,
        "preset": preset,
        "seed": seed,
        "trajectory": trajectory,
        "session": session,
    }


def render_frames(spec_: Mapping[str, JSON], times: Sequence[int]) -> Iterator[Patched]:
    """The frame at each time (ms on the trajectory clock) of the session `spec` names."""
    if spec_.get("generator") != GENERATOR or spec_.get("version") != GENERATOR_VERSION:
        raise DatasetError(
            f"render spec {dict(spec_)} needs {GENERATOR} version {GENERATOR_VERSION}: "
            "regenerate the dataset with this harness"
        )
    if spec_.get("preset") not in PRESETS:
        raise DatasetError(f"render spec names unknown preset {spec_.get('preset')!r}")
    if "intervening" in spec_:
        yield from _transit(times)
        return
    spec = cast(SessionSpec, spec_)  # this generator's and version's, as `session_spec` wrote
    plans = trajectory_plan(spec["preset"], int(spec["seed"]), int(spec["trajectory"]))
    plan = plans[int(spec["session"])]
    state = plan.opening.copy()
    pending = list(plan.events)
    for t in times:
        while pending and pending[0].time_ms <= t:
            apply(state, pending.pop(0))
        second = t - (t - plan.start_ms) % 1000
        yield render_patched(state.scene(second))


TRANSIT = "STREET"
"""Where the wearer is in a recording between sessions: no place, fixture or item of the
world, so that the added video never contradicts a label (a last-seen time, a count)."""


def intervening_spec(preset: str, seed: int, trajectory: int, after: int) -> SessionSpec:
    """The render spec of the recording after session `after` (Raw Lifelong, appendix B.6)."""
    return {**session_spec(preset, seed, trajectory, after), "intervening": True}


def _transit(times: Sequence[int]) -> Iterator[Patched]:
    empty = tuple(SlotView("", "", 0) for _ in range(SLOTS))
    for t in times:
        yield render_patched(Scene(format_ms(t - t % 1000), TRANSIT, "", empty, ""))
