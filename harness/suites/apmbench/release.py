"""The release layout: annotations as the paper prints them (APM-Bench, arXiv 2609.37559, D.3-D.8).

The paper's records carry no wrapper: only the MCQA format (D.3) names its
trajectory and candidate, and no record says where a session's video is or
when it starts. In this layout those come from the directory tree:

    RELEASE/
      <trajectory_id>/                    one directory per trajectory; its name is the id
        videos/<DAY>_<SESSION>_<HHMMSS>.mp4
                                          one video per session: day_id, session_id and
                                          the start time (local clock) are read from the
                                          name; the session ends where the video ends
                                          (.mkv, .mov and .webm are read too; HHMMSSff
                                          with hundredths of a second is accepted)
        annotations/<NAME>.json           one record as printed, or a JSON array of them

- trajectory_id: the directory name; a record that names one must name that.
- task_type: the record's field; when absent, the file's name if it is a task
  (e.g. annotations/ER.json).
- candidate_id: the record's field; when absent, "<trajectory_id>/<NAME>" for a
  file holding one record, "<trajectory_id>/<NAME>/<k>" for the k-th (from 0)
  record of an array.

A session that runs past midnight keeps its start day; times after midnight
may be written on the next day (DAY6 00:10:00) or on the session's own day
(DAY5 00:10:00, read as the next morning when that is inside the session).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.timecode import to_ms
from apmbench.harness.media.timeline import Session, Trajectory
from apmbench.harness.suites.apmbench import tasks

VIDEO_SUFFIXES = (".mp4", ".mkv", ".mov", ".webm")
_VIDEO_NAME = re.compile(r"^(DAY\d+)_(.+)_(\d{2})(\d{2})(\d{2})(\d{2})?$")


@dataclass(frozen=True)
class RawCandidate:
    """One annotation record and the ids it has, given or inferred."""

    raw: dict[str, object]
    where: str
    trajectory_id: str
    candidate_id: str
    task: str


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e


def _session(video: Path) -> Session:
    from apmbench.harness.media.frames import probe_duration_ms

    m = _VIDEO_NAME.match(video.stem)
    if not m:
        raise DatasetError(
            f"{video}: a session video is named <DAY>_<SESSION>_<HHMMSS>{video.suffix}, "
            f"e.g. DAY1_S002_202500{video.suffix}"
        )
    day, session_id, hh, mm, ss, hundredths = m.groups()
    start = to_ms(day, f"{hh}:{mm}:{ss}") + 10 * int(hundredths or 0)
    length = probe_duration_ms(video)
    if length <= 0:
        raise DatasetError(f"{video}: the video has no duration")
    return Session(session_id, day, start, start + length, video)


def _trajectory(directory: Path) -> Trajectory:
    videos_dir = directory / "videos"
    videos = sorted(p for p in videos_dir.glob("*") if p.suffix.lower() in VIDEO_SUFFIXES)
    if not videos:
        raise DatasetError(f"{videos_dir}: no session videos (<DAY>_<SESSION>_<HHMMSS>.mp4)")
    sessions = sorted((_session(v) for v in videos), key=lambda s: s.start_ms)
    for before, after in itertools.pairwise(sessions):
        if after.start_ms < before.end_ms:
            raise DatasetError(
                f"{directory.name}: session {after.session_id} starts before "
                f"{before.session_id} ends (videos {before.video} and {after.video})"
            )
    if len({s.session_id for s in sessions}) != len(sessions):
        raise DatasetError(f"{videos_dir}: two videos name the same session")
    return Trajectory(directory.name, "", tuple(sessions))


def _records(path: Path, trajectory_id: str) -> list[RawCandidate]:
    doc = _read_json(path)
    items = doc if isinstance(doc, list) else [doc]
    single = not isinstance(doc, list)
    out = []
    for k, raw in enumerate(items):
        where = f"{trajectory_id}/annotations/{path.name}" + ("" if single else f"[{k}]")
        if not isinstance(raw, dict):
            raise DatasetError(f"{where}: a record must be a JSON object")
        given = raw.get("trajectory_id")
        if given is not None and given != trajectory_id:
            raise DatasetError(
                f"{where}: names trajectory_id {given!r} but is in directory {trajectory_id!r} "
                "(the directory name is the trajectory id)"
            )
        task = raw.get("task_type", path.stem if path.stem in tasks.SPECS else None)
        if not isinstance(task, str):
            raise DatasetError(
                f"{where}: missing field 'task_type' (or name the file after the task, "
                f"one of {', '.join(tasks.ALL_TASKS)})"
            )
        default_id = f"{trajectory_id}/{path.stem}" + ("" if single else f"/{k}")
        cid = raw.get("candidate_id", default_id)
        if not isinstance(cid, str):
            raise DatasetError(f"{where}: field 'candidate_id' must be str, got {cid!r}")
        out.append(RawCandidate(raw, where, trajectory_id, cid, task))
    return out


def read_release(root: Path) -> tuple[tuple[Trajectory, ...], list[RawCandidate], list[Path]]:
    """Trajectories, annotation records and the annotation files of a release directory."""
    directories = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    trajectories: list[Trajectory] = []
    records: list[RawCandidate] = []
    files: list[Path] = []
    for d in directories:
        if not (d / "videos").is_dir() or not (d / "annotations").is_dir():
            raise DatasetError(
                f"{d}: neither dataset.json in {root} nor a release trajectory directory "
                "(videos/ and annotations/); see README.md, 'Dataset format'"
            )
        trajectories.append(_trajectory(d))
        annotation_files = sorted((d / "annotations").glob("*.json"))
        files += annotation_files
        for path in annotation_files:
            records += _records(path, d.name)
    if not trajectories:
        raise DatasetError(
            f"{root}: no dataset.json and no trajectory directories; see README.md, "
            "'Dataset format'"
        )
    if not records:
        raise DatasetError(f"{root}: no annotation records (<trajectory>/annotations/*.json)")
    return tuple(trajectories), records, files
