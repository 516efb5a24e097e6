"""The synthetic frame path's shortcuts give exactly the frames of the long way round.

The paper-scale dry run renders about 400,000 frames; three shortcuts make that fit:
the rest of a scene is drawn once and only the clock per frame, a same-size frame skips
PyAV's (identity) conversion, and the first simulated life covering every task is
recorded instead of searched for again. Each is checked against the reference path, and
each check is shown to catch a shortcut that cuts a corner.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import av
import numpy as np
import numpy.typing as npt
import pytest

from apmbench.adapters.perception import layout
from apmbench.adapters.perception.font import draw_text
from apmbench.adapters.sdk.types import Frame, FrameEncoding
from apmbench.harness.media import frames, jpeg_rows
from apmbench.harness.media.frames import FrameSettings
from apmbench.harness.media.timeline import Session
from apmbench.harness.suites.apmbench.synth import live
from apmbench.harness.synthetic import render
from apmbench.harness.synthetic.world import SessionPlan, apply

Image = npt.NDArray[np.uint8]


def scenes(plan: SessionPlan) -> Iterator[layout.Scene]:
    state = plan.opening.copy()
    pending = list(plan.events)
    for ms in range(plan.start_ms, plan.end_ms, 1000):
        while pending and pending[0].time_ms <= ms:
            apply(state, pending.pop(0))
        yield state.scene(ms)


def plans() -> tuple[SessionPlan, ...]:
    return live.trajectory_plan("small", 0, 0)


def mismatches(fast: Callable[[layout.Scene], Image]) -> int:
    return sum(
        not np.array_equal(fast(scene), render.draw(scene)) for p in plans() for scene in scenes(p)
    )


def test_render_equals_the_reference_drawing_on_whole_sessions() -> None:
    assert sum(1 for p in plans() for _ in scenes(p)) > 400
    assert mismatches(render.render) == 0


def test_the_comparison_catches_a_stale_rest_of_scene() -> None:
    """A cache keyed on too little (here: the place only) reuses a frame whose slots or
    hand have changed since; the whole-session comparison must see it."""
    by_place: dict[str, Image] = {}

    def stale(scene: layout.Scene) -> Image:
        rest = by_place.setdefault(scene.place, render.draw(dataclasses.replace(scene, clock="")))
        image = rest.copy()
        render._draw_clock(image, scene.clock)
        return image

    assert mismatches(stale) > 0


def test_the_comparison_catches_a_clock_drawn_over_other_elements() -> None:
    """Drawing the clock last equals drawing it first only because its row overlaps no
    other element; a clock moved onto the place row must show."""

    def overlapping(scene: layout.Scene) -> Image:
        image = render._without_clock(dataclasses.replace(scene, clock="")).copy()
        draw_text(image, layout.PLACE_ROW[0], layout.PLACE_ROW[1] + 4, scene.clock, 2)
        return image

    assert mismatches(overlapping) > 0


def via_pyav(rgb: Image, time_ms: int, settings: FrameSettings) -> Frame:
    return frames._encode(av.VideoFrame.from_ndarray(rgb, format="rgb24"), time_ms, settings)


@pytest.mark.parametrize(
    "settings",
    [
        FrameSettings(),
        FrameSettings(max_side=224),
        FrameSettings(encoding=FrameEncoding.RGB24),
    ],
    ids=["jpeg-448", "jpeg-224-resized", "rgb24"],
)
def test_rendered_frames_encode_as_through_pyav(settings: FrameSettings) -> None:
    coder = jpeg_rows.RowCoder(settings.jpeg_quality)
    for k, scene in enumerate(scenes(plans()[0])):
        rgb = render.render(scene)
        assert frames._encode_rendered(rgb, k, settings, coder) == via_pyav(rgb, k, settings)


def search(preset: str, seed: int, trajectory: int) -> live.World:
    for attempt in range(live.ATTEMPTS):
        world = live._attempt(preset, seed, trajectory, attempt)
        if world is not None:
            return world
    raise AssertionError("no covering life")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("APMBENCH_CACHE", str(tmp_path))
    live.trajectory_world.cache_clear()
    live.trajectory_plan.cache_clear()
    yield tmp_path
    live.trajectory_world.cache_clear()
    live.trajectory_plan.cache_clear()


def test_the_recorded_life_is_the_searched_one(cache: Path) -> None:
    expected = search("tiny", 0, 0)
    assert live.trajectory_world("tiny", 0, 0) == expected
    recorded = live._attempt_path("tiny", 0, 0)
    assert recorded.is_relative_to(cache)
    attempt = recorded_attempt()
    assert attempt > 0  # tiny's first covering life is not the first drawn
    live.trajectory_world.cache_clear()
    calls: list[int] = []
    real = live._attempt

    def counted(preset: str, seed: int, trajectory: int, attempt: int) -> live.World | None:
        calls.append(attempt)
        return real(preset, seed, trajectory, attempt)

    live._attempt = counted
    try:
        assert live.trajectory_world("tiny", 0, 0) == expected
    finally:
        live._attempt = real
    assert calls == [attempt]  # one simulation, not the search


@pytest.mark.parametrize("planted", ["0", "5", "-3", "junk"])
def test_a_recorded_life_that_does_not_cover_every_task_is_searched_again(
    cache: Path, planted: str
) -> None:
    """A record naming a life without every task (or garbage) must not change the frames."""
    expected = search("tiny", 0, 0)
    path = live._attempt_path("tiny", 0, 0)
    path.parent.mkdir(parents=True)
    path.write_text(planted)
    assert live.trajectory_world("tiny", 0, 0) == expected
    assert live._attempt("tiny", 0, 0, recorded_attempt()) == expected
    live.trajectory_plan.cache_clear()
    path.write_text(planted)
    assert live.trajectory_plan("tiny", 0, 0) == expected[0]


def recorded_attempt(preset: str = "tiny") -> int:
    known = live._recorded_attempt(preset, 0, 0)
    assert known is not None and known[1], "the record is sealed once checked"
    return known[0]


@pytest.mark.parametrize("planted", ["5", "5 0123456789abcdef"])
def test_only_a_sealed_record_lets_rendering_skip_the_candidates(
    cache: Path, planted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rendering needs the sessions alone; it skips drawing the candidates (which check
    the life covers every task) only for a record the check itself sealed."""
    expected = search("tiny", 0, 0)
    path = live._attempt_path("tiny", 0, 0)
    path.parent.mkdir(parents=True)
    path.write_text(planted)
    drawn: list[int] = []
    real = live.generate

    def counted(*args: object, **kwargs: object) -> object:
        drawn.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(live, "generate", counted)
    live.trajectory_plan.cache_clear()
    assert live.trajectory_plan("tiny", 0, 0) == expected[0]
    assert drawn, "an unsealed record is checked (and the search runs)"
    searched = len(drawn)
    live.trajectory_plan.cache_clear()
    live.trajectory_world.cache_clear()
    assert live.trajectory_plan("tiny", 0, 0) == expected[0]
    assert len(drawn) == searched, "the sealed record renders without drawing candidates"


def rendered_session(index: int) -> Session:
    plan = plans()[index]
    spec = live.session_spec("small", 0, 0, index)
    return Session(plan.session_id, plan.day_id, plan.start_ms, plan.end_ms, None, spec)


@pytest.mark.parametrize("index", [0, 2])
def test_frames_rendered_at_chosen_times_equal_the_full_decode(index: int) -> None:
    """A report's thumbnails draw a few frames only; they must be the frames the run
    pushed, events before them applied, whatever times are skipped."""
    session = rendered_session(index)
    settings = FrameSettings(max_side=160, jpeg_quality=70)
    every = list(frames.decode_session(session, settings))
    wanted = [f.time_ms for f in every[5::37]] + [every[-1].time_ms]
    picked = list(frames.rendered_frames_at(session, settings, reversed(wanted)))
    assert picked == [f for f in every if f.time_ms in set(wanted)]
    changed = [f for f in every if f.time_ms in set(wanted)]
    assert len({f.data for f in changed}) == len(changed)  # different frames, not one repeated
