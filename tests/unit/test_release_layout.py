"""The release layout: the paper's D.3-D.8 records as printed, ids from the directory tree.

APM-Bench (arXiv 2609.37559) prints its annotation formats in appendix D.3-D.8;
only D.3 names a trajectory_id and a candidate_id, and none says where a
session's video is. tests/fixtures/appendix holds those records verbatim.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fixtures.build_mini import write_video

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.timecode import MS_PER_DAY, to_ms
from apmbench.harness.suites.apmbench.dataset import load_dataset

APPENDIX = Path(__file__).resolve().parents[1] / "fixtures" / "appendix"


def test_the_paper_examples_load_as_printed() -> None:
    d = load_dataset(APPENDIX)
    by_task = {c.task: c for c in d.candidates}
    assert set(by_task) == {"ER", "ERA", "RCR", "MPA", "PRM", "TPG"}
    # D.3 names its ids ("…" in the paper); the others get theirs from the tree.
    assert by_task["ER"].candidate_id == "…" and by_task["ER"].trajectory_id == "…"
    assert by_task["ERA"].candidate_id == "era/ERA" and by_task["ERA"].trajectory_id == "era"
    assert by_task["ER"].correct_option_id == "B"
    (er_probe,) = by_task["ER"].probes
    assert er_probe.time_ms == to_ms("DAY4", "18:39:09")
    # D.4: the negative heartbeat at 20:25:45, the positive at 20:32:27.
    era = by_task["ERA"]
    assert [(p.positive, p.time_ms) for p in era.probes] == [
        (False, to_ms("DAY1", "20:25:45")),
        (True, to_ms("DAY1", "20:32:27")),
    ]
    # D.8: probes at the ends of the ideal window and of the silence window.
    tpg = by_task["TPG"]
    assert sorted(p.time_ms for p in tpg.probes) == [
        to_ms("DAY5", "23:00:30"),
        to_ms("DAY5", "23:01:32"),
    ]
    # Sessions come from the video names: day, session id, start; the end from the video.
    session = d.trajectory("tpg").sessions[2]
    assert (session.day_id, session.session_id) == ("DAY5", "S007")
    assert session.start_ms == to_ms("DAY5", "22:59:50") and session.duration_s == 110


def release(tmp_path: Path, records: dict[str, Any], videos: dict[str, int]) -> Path:
    root = tmp_path / "release"
    for name, seconds in videos.items():
        (root / "T1" / "videos").mkdir(parents=True, exist_ok=True)
        write_video(root / "T1" / "videos" / f"{name}.mp4", seconds, 0)
    (root / "T1" / "annotations").mkdir(parents=True, exist_ok=True)
    for name, doc in records.items():
        (root / "T1" / "annotations" / f"{name}.json").write_text(json.dumps(doc))
    return root


def rcr(times: dict[str, tuple[str, str]]) -> dict[str, Any]:
    def at(key: str) -> dict[str, str]:
        day, time = times[key]
        return {"day_id": day, "session_id": "S007", "query_time": time}

    reg_day, reg_time = times["registration"]
    return {
        "task_type": "RCR",
        "registration_event": {
            "day_id": reg_day, "session_id": "S007", "registration_time": reg_time,
            "registration_text": "Remind me to switch off the stove.",
        },
        "positive_heartbeat": {**at("positive"), "proactive_response": "Stove!", "reason": "r"},
        "negative_heartbeats": [{**at("negative"), "silence_reason": "not yet"}],
    }  # fmt: skip


def test_a_session_crossing_midnight_loads_with_correct_times(tmp_path: Path) -> None:
    # An EgoLife-style recording from 23:59:30 to 00:00:30: times after midnight
    # may be written on the next day or on the recording's own day.
    root = release(
        tmp_path,
        {
            "next_day": rcr(
                {
                    "registration": ("DAY5", "23:59:35"),
                    "negative": ("DAY5", "23:59:50"),
                    "positive": ("DAY6", "00:00:10"),
                }
            ),
            "same_day": rcr(
                {
                    "registration": ("DAY5", "23:59:35"),
                    "negative": ("DAY5", "23:59:50"),
                    "positive": ("DAY5", "00:00:20"),
                }
            ),
        },
        {"DAY5_S007_235930": 60},
    )
    d = load_dataset(root)
    (session,) = d.trajectory("T1").sessions
    assert session.start_ms == to_ms("DAY5", "23:59:30")
    assert session.end_ms == to_ms("DAY6", "00:00:30")
    by_id = {c.candidate_id: c for c in d.candidates}
    assert set(by_id) == {"T1/next_day", "T1/same_day"}
    positive = {cid: next(p for p in c.probes if p.positive).time_ms for cid, c in by_id.items()}
    assert positive["T1/next_day"] == to_ms("DAY6", "00:00:10")
    assert positive["T1/same_day"] == to_ms("DAY5", "00:00:20") + MS_PER_DAY
    # Probes stay in time order across midnight.
    assert [p.positive for p in by_id["T1/same_day"].probes] == [False, True]


def test_a_time_outside_the_session_is_still_refused_across_midnight(tmp_path: Path) -> None:
    root = release(
        tmp_path,
        {
            "late": rcr(
                {
                    "registration": ("DAY5", "23:59:35"),
                    "negative": ("DAY5", "23:59:50"),
                    "positive": ("DAY6", "00:05:00"),
                }
            )
        },
        {"DAY5_S007_235930": 60},
    )
    with pytest.raises(DatasetError, match="outside session S007"):
        load_dataset(root)


def test_dataset_json_sessions_may_cross_midnight(tmp_path: Path) -> None:
    # The project layout says when a session ends: an end_time before its
    # start_time is on the next day.
    root = tmp_path / "ds"
    (root / "videos").mkdir(parents=True)
    (root / "candidates").mkdir()
    write_video(root / "videos" / "s.mp4", 60, 0)
    session = {"session_id": "S007", "day_id": "DAY5", "start_time": "23:59:30",
               "end_time": "00:00:30", "video": "videos/s.mp4"}  # fmt: skip
    doc = {"format": "apmbench-dataset", "format_version": 1,
           "trajectories": [{"trajectory_id": "T1", "sessions": [session]}]}  # fmt: skip
    (root / "dataset.json").write_text(json.dumps(doc))
    record = rcr({"registration": ("DAY5", "23:59:35"), "negative": ("DAY5", "23:59:50"),
                  "positive": ("DAY6", "00:00:10")})  # fmt: skip
    record.update(trajectory_id="T1", candidate_id="c1")
    (root / "candidates" / "a.json").write_text(json.dumps([record]))
    d = load_dataset(root)
    (s,) = d.trajectory("T1").sessions
    assert (s.start_ms, s.end_ms) == (to_ms("DAY5", "23:59:30"), to_ms("DAY6", "00:00:30"))
    assert max(p.time_ms for p in d.candidates[0].probes) == to_ms("DAY6", "00:00:10")


def test_a_record_naming_another_trajectory_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "release"
    shutil.copytree(APPENDIX / "era", root / "era")
    doc = json.loads((root / "era" / "annotations" / "ERA.json").read_text())
    doc["trajectory_id"] = "T9"
    (root / "era" / "annotations" / "ERA.json").write_text(json.dumps(doc))
    with pytest.raises(DatasetError, match="names trajectory_id 'T9' but is in directory 'era'"):
        load_dataset(root)


def test_a_badly_named_video_says_how_to_name_it(tmp_path: Path) -> None:
    root = tmp_path / "release"
    shutil.copytree(APPENDIX / "rcr", root / "rcr")
    video = next((root / "rcr" / "videos").glob("*.mp4"))
    video.rename(video.with_name("session1.mp4"))
    with pytest.raises(DatasetError, match=r"<DAY>_<SESSION>_<HHMMSS>\.mp4"):
        load_dataset(root)


def test_an_array_of_records_gets_ids_by_position(tmp_path: Path) -> None:
    root = tmp_path / "release"
    shutil.copytree(APPENDIX / "rcr", root / "rcr")
    doc = json.loads((root / "rcr" / "annotations" / "RCR.json").read_text())
    (root / "rcr" / "annotations" / "RCR.json").write_text(json.dumps([doc, doc]))
    d = load_dataset(root)
    assert [c.candidate_id for c in d.candidates] == ["rcr/RCR/0", "rcr/RCR/1"]
