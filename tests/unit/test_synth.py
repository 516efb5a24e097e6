"""The synthetic world: rendering is readable from pixels, candidates are sound and unbiased."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import av
import numpy as np
import pytest
import simplejpeg

from apmbench.adapters.perception.reader import read_scene
from apmbench.adapters.sdk import Choice, Query, QueryKind
from apmbench.adapters.systems.text_only import TextOnly
from apmbench.harness.media.timecode import to_ms
from apmbench.harness.suites.apmbench.synth.candidates import TrajectoryFacts, generate
from apmbench.harness.synthetic.render import render
from apmbench.harness.synthetic.world import plan_sessions


def trajectories(
    n: int, sessions: int = 5, seconds: int = 150
) -> list[tuple[TrajectoryFacts, list]]:  # type: ignore[type-arg]
    out = []
    rng = random.Random(7)
    for i in range(n):
        facts = TrajectoryFacts(f"T{i}", plan_sessions(rng, sessions, seconds))
        out.append((facts, generate(facts, rng, 3)))
    return out


def test_every_rendered_scene_reads_back_through_jpeg_and_resizing() -> None:
    rng = random.Random(3)
    for plan in plan_sessions(rng, 3, 60):
        for second in range(0, plan.seconds, 7):
            now = plan.start_ms + second * 1000
            scene = plan.state_at(now).scene(now)
            image = render(scene)
            jpeg = simplejpeg.decode_jpeg(
                simplejpeg.encode_jpeg(image, quality=85, colorspace="RGB")
            )
            assert read_scene(jpeg) == scene
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            assert read_scene(frame.to_ndarray(width=336, height=252, format="rgb24")) == scene


def test_every_task_is_generated_with_sound_times() -> None:
    made = trajectories(4)
    tasks = Counter(c["task_type"] for _, cs in made for c in cs)
    assert set(tasks) == {"ER", "EST", "TR", "ACR", "CT", "OCR", "STU", "EA",
                          "ERA", "RCR", "MPA", "PRM", "TPG"}  # fmt: skip
    for _, candidates in made:
        for c in candidates:
            if "query" not in c:
                continue
            q = to_ms(c["query"]["day_id"], c["query"]["query_time"])
            for e in c["evidence_moments"]:
                assert to_ms(e["day_id"], e["end_time"]) <= q, c["candidate_id"]
            if c["task_type"] in ("ER", "EST", "TR"):
                assert all(
                    e["session_id"] != c["query"]["session_id"] for e in c["evidence_moments"]
                )
    ea = [c for _, cs in made for c in cs if c["task_type"] == "EA"]
    assert Counter(c["evidence_available"] for c in ea) == {True: len(ea) // 2, False: len(ea) // 2}


def test_answers_match_the_world_at_query_time() -> None:
    for facts, candidates in trajectories(2):
        for c in candidates:
            if c["task_type"] not in ("CT", "OCR", "STU"):
                continue
            index = next(
                i for i, s in enumerate(facts.sessions) if s.session_id == c["query"]["session_id"]
            )
            t = to_ms(c["query"]["day_id"], c["query"]["query_time"])
            scene = facts.sessions[index].state_at(t).scene(t)
            answer = next(
                o["text"] for o in c["choices"] if o["option_id"] == c["correct_option_id"]
            )
            if c["task_type"] == "OCR":
                assert answer == scene.screen
            elif c["task_type"] == "CT":
                assert any(str(s.count) == answer and s.label in c["question"] for s in scene.slots)
            else:
                left = c["question"].rsplit(" ", 1)[1].rstrip("?")
                i = scene.slot_of(left)
                assert i is not None and scene.slots[i + 1].label == answer


def test_correct_options_are_spread_over_positions() -> None:
    letters = Counter(c["correct_option_id"] for _, cs in trajectories(6) for c in cs
                      if "correct_option_id" in c and c["task_type"] != "EA")  # fmt: skip
    total = sum(letters.values())
    assert all(0.15 < letters[x] / total < 0.35 for x in "ABCD"), letters


def test_text_alone_does_not_answer() -> None:
    """A text-only answerer stays near chance on every multiple-choice task."""
    system = TextOnly()
    right: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    for _, candidates in trajectories(12):
        for c in candidates:
            if "query" not in c or c["task_type"] == "EA":
                continue
            query = Query("q", 0, QueryKind.MULTIPLE_CHOICE, "", "", c["question"],
                          tuple(Choice(o["option_id"], o["text"]) for o in c["choices"]))  # fmt: skip
            answer = json.loads("".join(system.query(query)))["answer"]
            asked[c["task_type"]] += 1
            right[c["task_type"]] += answer == c["correct_option_id"]
    overall = sum(right.values()) / sum(asked.values())
    assert 0.15 < overall < 0.35, (overall, right, asked)
    for task in asked:
        assert right[task] / asked[task] < 0.5, (task, right[task], asked[task])


@pytest.mark.slow
def test_generation_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    from apmbench.harness.suites.apmbench.synth.presets import PRESETS
    from apmbench.harness.suites.apmbench.synth.writer import build

    build(PRESETS["tiny"], 5, tmp_path / "a")
    build(PRESETS["tiny"], 5, tmp_path / "b")
    for name in (
        "dataset.json",
        *(f"candidates/{p.name}" for p in (tmp_path / "a" / "candidates").iterdir()),
    ):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    first = next((tmp_path / "a" / "videos").iterdir())
    with av.open(str(first)) as v:
        images = [f.to_ndarray(format="rgb24") for f in v.decode(video=0)]
    assert len(images) == 2 * 60  # 2 FPS, one-minute session
    assert not np.array_equal(images[0], images[-1])
    with pytest.raises(FileExistsError):
        build(PRESETS["tiny"], 5, tmp_path / "a")


def test_live_rendering_shows_what_the_stored_video_shows(tmp_path: Path) -> None:
    from dataclasses import replace

    from apmbench.harness.media.frames import FrameSettings, decode_session
    from apmbench.harness.suites.apmbench.dataset import load_dataset
    from apmbench.harness.suites.apmbench.synth.live import session_spec
    from apmbench.harness.suites.apmbench.synth.presets import PRESETS
    from apmbench.harness.suites.apmbench.synth.writer import build

    build(PRESETS["tiny"], 3, tmp_path / "d")
    stored = load_dataset(tmp_path / "d").trajectories[0].sessions[2]
    live = replace(stored, video=None, render=session_spec("tiny", 3, 0, 2))
    a = [read_scene(f.rgb()) for f in decode_session(stored, FrameSettings())]
    b = [read_scene(f.rgb()) for f in decode_session(live, FrameSettings())]
    assert len(a) == len(b) == 60 and a == b
