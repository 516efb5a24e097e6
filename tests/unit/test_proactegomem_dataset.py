"""The ProactEgoMem dataset format: the documented example loads, and bad input is refused
with a message that names the clip and the field to fix."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.errors import DatasetError
from apmbench.harness.suites import suite_of_dataset
from apmbench.harness.suites.proactegomem.dataset import load_dataset
from apmbench.harness.suites.proactegomem.synth import PRESETS, build

DOC = Path(__file__).parents[2] / "docs" / "PROACTEGOMEM.md"


def example() -> dict[str, Any]:
    """The example dataset.json of docs/PROACTEGOMEM.md."""
    block = re.search(r"```json\n(.*?)\n```", DOC.read_text(), re.S)
    assert block
    doc: dict[str, Any] = json.loads(block.group(1))
    return doc


def write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    (tmp_path / "videos").mkdir(exist_ok=True)
    (tmp_path / "videos" / "kitchen-01.mp4").write_bytes(b"\0")
    (tmp_path / "dataset.json").write_text(json.dumps(doc))
    return tmp_path


def test_the_documented_example_loads(tmp_path: Path) -> None:
    data = load_dataset(write(tmp_path, example()))
    [clip] = data.clips
    assert clip.task == "ST" and len(clip.events) == 2 and clip.questions[0].answer == "B"
    assert data.trajectories[0].sessions[0].end_ms == 60_000
    assert clip.events[0].state == "on" and clip.events[1].state == ""
    assert data.track == "Daily"
    assert type(suite_of_dataset(tmp_path)).__name__ == "ProactEgoMem"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(benchmark="egoprobe"), 'needs "benchmark": "proactegomem"'),
        (lambda d: d["clips"][0].update(task="XX"), "task must be one of ST, LT"),
        (lambda d: d["clips"][0]["events"][0].update(end_s=61), "<= the clip's duration_s"),
        (lambda d: d["clips"][0]["events"][0].update(start_s=9, end_s=8), "start_s <= end_s"),
        (lambda d: d["clips"][0]["events"][0].pop("object"), "missing field 'object'"),
        (lambda d: d["clips"][0]["questions"][0].update(answer="E"), "one of A, B, C, D"),
        (lambda d: d["clips"][0]["questions"][0]["choices"].pop("D"), "exactly A, B, C, D"),
        (lambda d: d["clips"][0].update(video="videos/missing.mp4"), "does not exist"),
        (lambda d: d["clips"][0].update(render={}), "exactly one of 'video'"),
        (lambda d: d["clips"].append(dict(d["clips"][0])), "duplicate clip_id"),
        (lambda d: d.update(levels=["proactive"]), "'levels' must list"),
        (lambda d: d["clips"][0]["events"][0].update(location="shelf"), "'location' is for LT"),
        (
            lambda d: (
                d["clips"][0].update(task="LT") or d["clips"][0]["events"][0].update(state="on")
            ),
            "'state' is for ST",
        ),
        (lambda d: d.update(track="Weekend"), "'track' must be one of Daily, Sci"),
    ],
)
def test_bad_input_names_what_to_fix(tmp_path: Path, edit: Any, message: str) -> None:
    doc = example()
    edit(doc)
    with pytest.raises(DatasetError, match=re.escape(message)) as e:
        load_dataset(write(tmp_path, doc))
    if "clips" in message or "task" in message or "event" in message:
        assert "kitchen-01" in str(e.value)


def test_synthetic_ground_truth_is_exact_and_varies_by_clip(tmp_path: Path) -> None:
    build(PRESETS["small"], 0, tmp_path)
    data = load_dataset(tmp_path)
    starts = [tuple(e.start_s for e in c.events) for c in data.clips]
    assert len(set(starts)) == len(starts)
    for c in data.clips:
        assert all(e.start_s == int(e.start_s) and e.end_s > e.start_s for e in c.events)
        answers = [q.answer for q in c.questions]
        assert answers and set(answers) <= {"A", "B", "C", "D"}


def test_a_frame_rate_other_than_one_is_refused(tmp_path: Path) -> None:
    """The paper's steps are 1 s, one frame each: --fps 2 would push two frames a step and
    list a window the system never got. Refused before any system starts."""
    from click.testing import CliRunner

    from apmbench.harness.cli import main

    (tmp_path / "ds").mkdir()
    root = write(tmp_path / "ds", example())
    result = CliRunner().invoke(
        main, ["evaluate", "--dataset", str(root), "--system", "null", "--fps", "2",
               "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "--fps must be 1, got 2" in result.output, result.output
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_a_public_part_plans_no_oracle_memory_and_refuses_events(tmp_path: Path) -> None:
    from apmbench.harness.suites.proactegomem.plan import items, plan_clip
    from apmbench.harness.suites.proactegomem.prompts import ORACLE_MEMORY

    labelled = load_dataset(write(tmp_path, example()))
    doc = example()
    clip = {k: v for k, v in doc["clips"][0].items() if k != "events"}
    public = load_dataset(write(tmp_path, {**doc, "labels": "withheld", "clips": [clip]}))
    assert public.labels_withheld and public.clips[0].events == ()
    names = [s.name for s in plan_clip(public, public.trajectories[0])]
    assert names == [s.name for s in plan_clip(labelled, labelled.trajectories[0])
                     if s.name != "qa-oracle"]  # fmt: skip
    assert "qa-oracle" not in names and "qa-proact" in names
    assert not any(i.endswith(":oracle") for i in items(public))
    assert any(i.endswith(":oracle") for i in items(labelled))
    asks = [a for s in plan_clip(public, public.trajectories[0]) for a in s.asks]
    assert all(a.fields["labels_withheld"] is True for a in asks)
    assert not any(
        "labels_withheld" in a.fields
        for s in plan_clip(labelled, labelled.trajectories[0])
        for a in s.asks
    )
    assert ORACLE_MEMORY not in {a.fields.get("condition", "") for a in asks}
    # A "public" part that still lists its events is refused, naming the clip.
    write(tmp_path, {**doc, "labels": "withheld"})
    with pytest.raises(DatasetError, match="of a public part lists events: a public part"):
        load_dataset(tmp_path)


def test_a_rendered_clip_splits_to_a_video_of_the_same_frames(tmp_path: Path) -> None:
    """The public part's lossless video decodes to exactly the JPEG frames the render spec
    gives a run (so the blind run sees what the labelled one does)."""
    from dataclasses import replace

    from apmbench.harness.media.frames import FrameSettings, decode_session
    from apmbench.harness.suites.proactegomem.split import write_rendered

    build(PRESETS["tiny"], 3, tmp_path / "data")
    for traj in load_dataset(tmp_path / "data").trajectories[:2]:
        session = traj.sessions[0]
        video = tmp_path / f"{traj.trajectory_id}.mp4"
        write_rendered(session, video)
        rendered = list(decode_session(session, FrameSettings()))
        decoded = list(decode_session(replace(session, render=None, video=video), FrameSettings()))
        assert len(rendered) == len(decoded) == 30
        assert [(f.time_ms, f.data) for f in rendered] == [(f.time_ms, f.data) for f in decoded]
