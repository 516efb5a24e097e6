"""Loading and validating the on-disk dataset format; bad input says what to fix."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from apmbench.adapters.sdk.types import UserTurnKind
from apmbench.harness.errors import DatasetError, VideoError
from apmbench.harness.media.frames import FrameSettings, decode_session, frame_times
from apmbench.harness.media.timecode import to_ms
from apmbench.harness.suites.apmbench.dataset import load_dataset


def test_mini_loads(mini: Path) -> None:
    d = load_dataset(mini)
    assert [t.trajectory_id for t in d.trajectories] == ["T01", "T02"]
    assert {c.task for c in d.candidates} == {
        "ER", "EST", "TR", "ACR", "CT", "OCR", "STU", "EA", "ERA", "RCR", "MPA", "PRM", "TPG",
    }  # fmt: skip
    era = next(c for c in d.candidates if c.task == "ERA")
    assert era.turns[0].kind is UserTurnKind.QUESTION
    assert era.turns[0].time_ms == d.trajectory("T01").sessions[0].start_ms
    prm = next(c for c in d.candidates if c.task == "PRM")
    assert prm.turns[0].session_index == 0
    assert all(p.session_index == 1 and p.interval_start_ms for p in prm.probes)
    assert [p.positive for p in prm.probes] == [False, True]
    assert len(d.content_hash) == 64


def edited(mini: Path, tmp_path: Path, name: str, change: Callable[[Any], None]) -> Path:
    root = tmp_path / "ds"
    shutil.copytree(mini, root)
    path = root / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return root


def _set(key: str, value: Any, index: int = 0) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        doc[index][key] = value

    return change


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("dataset.json", lambda d: d.update(format_version=9), "format_version 9 is not supported"),
        ("dataset.json", lambda d: d["trajectories"][0]["sessions"][1].update(start_time="07:00:00"),
         "starts before the previous session ends"),
        ("dataset.json", lambda d: d["trajectories"][0]["sessions"][0].pop("video"),
         "missing field 'video'"),
        ("candidates/mcqa.json", _set("correct_option_id", "F"), "correct_option_id 'F' is not an option"),
        ("candidates/mcqa.json", _set("trajectory_id", "T99"), "trajectory 'T99' is not in dataset.json"),
        ("candidates/mcqa.json", _set("task_type", "XYZ"), "unknown task_type 'XYZ'"),
        ("candidates/mcqa.json", _set("query", {"day_id": "DAY1", "session_id": "S002",
                                                "query_time": "13:00:00"}),
         "query_time DAY1 13:00:00 is outside session S002"),
        ("candidates/mcqa.json", _set("candidate_id", "T01-EST-1"), "duplicate candidate_id"),
        ("candidates/evidence_availability.json", _set("evidence_available", False),
         "contradicts correct_option_id 'B'"),
        ("candidates/adaptive.json", lambda d: d[1]["registration_event"].update(
            registration_time="12:30:35"), "a probe precedes the registration"),
    ],
)  # fmt: skip
def test_bad_annotations_are_named(
    mini: Path, tmp_path: Path, name: str, change: Callable[[Any], None], message: str
) -> None:
    with pytest.raises(DatasetError, match=message.replace("(", r"\(")):
        load_dataset(edited(mini, tmp_path, name, change))


def test_missing_and_short_videos_fail_before_any_work(mini: Path, tmp_path: Path) -> None:
    root = edited(mini, tmp_path, "dataset.json", lambda d: None)
    (root / "videos" / "T02_S002.mp4").unlink()
    with pytest.raises(DatasetError, match=r"session videos not found: .*T02_S002\.mp4"):
        load_dataset(root)
    longer = edited(
        mini,
        tmp_path / "b",
        "dataset.json",
        lambda d: d["trajectories"][0]["sessions"][0].update(end_time="08:01:30"),
    )
    with pytest.raises(
        DatasetError, match=r"T01_S001\.mp4 lasts 40\.0 s but session T01/S001 lasts 90\.0 s"
    ):
        load_dataset(longer)


def test_unreadable_video(mini: Path, tmp_path: Path) -> None:
    root = edited(mini, tmp_path, "dataset.json", lambda d: None)
    (root / "videos" / "T01_S001.mp4").write_bytes(b"this is not a video")
    with pytest.raises(VideoError, match=r"cannot read video .*T01_S001\.mp4"):
        load_dataset(root)


def test_decoding_samples_the_latest_frame_at_each_second(mini: Path) -> None:
    session = load_dataset(mini).trajectory("T01").sessions[0]
    times = frame_times(session, 1.0)
    assert len(times) == 40 and times[1] - times[0] == 1000
    frames = list(decode_session(session, FrameSettings(fps=2.0, max_side=48)))
    assert [f.time_ms - session.start_ms for f in frames[:3]] == [0, 500, 1000]
    assert (frames[0].width, frames[0].height) == (48, 36)
    assert frames[0].rgb().shape == (36, 48, 3)
    until = session.start_ms + 10_000
    assert max(f.time_ms for f in decode_session(session, FrameSettings(), until)) == until
    assert to_ms("DAY1", "08:00:00") == session.start_ms


@pytest.mark.parametrize(
    ("index", "change", "message"),
    [
        # T01-EA-unavail asks in S004: S001's evidence is outside the replay of S002..S004.
        (1, lambda c: c.update(evidence_available=True, correct_option_id="A"),
         r"evidence_available=true but its evidence in S001 lies outside the replayed sessions "
         r"S002\.\.S004"),
        # Asked in S003 instead, the same evidence is inside the replay of S001..S003.
        (1, lambda c: c.update(query={"day_id": "DAY2", "session_id": "S003",
                                      "query_time": "09:15:45"}),
         r"evidence_available=false but all its evidence lies inside the replayed sessions "
         r"S001\.\.S003"),
        (0, lambda c: c["evidence_moments"][0].update(start_time="09:15:45", end_time="09:15:48",
                                                      session_id="S003", day_id="DAY2"),
         "ends after the query at DAY2 09:15:40"),
        (0, lambda c: c.update(evidence_moments=[]), "EA needs evidence_moments"),
    ],
)  # fmt: skip
def test_evidence_availability_labels_must_match_their_evidence(
    mini: Path, tmp_path: Path, index: int, change: Callable[[Any], None], message: str
) -> None:
    def edit(doc: Any) -> None:
        change(doc[index])

    root = edited(mini, tmp_path, "candidates/evidence_availability.json", edit)
    with pytest.raises(DatasetError, match=message):
        load_dataset(root)
