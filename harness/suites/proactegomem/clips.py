"""ProactEgoMem from clips with interval annotations (the clips layout).

The paper (ProactEgoMem, section 4 and appendix K) organizes the benchmark around clips
cut from Ego4D and lab recordings: each clip has a task (IC, ST or LT), annotated events
(an object, its start and, for tracking, its end, in clip-local seconds: the clock of the
prompts' `current_time_sec`), an LT event's destination, and multiple-choice questions
(four choices, one correct, a category). It prints no file schema, so this layout is ours,
with the fields named as the paper names them:

    DIR/proactegomem_clips.json
    DIR/clips/<clip_id>.mp4            (any path under DIR, named by "video")

proactegomem_clips.json (docs/real-data.md has a filled example):

    {"format": "proactegomem-clips", "version": 1, "name": "my-clips",
     "levels": ["intervention", "notification"], "track": "Sci",
     "clips": [{
        "clip_id": "...", "video": "clips/....mp4", "task": "LT",
        "events": [{"object": "keys", "interval": [4.0, 9.5], "location": "drawer"}],
        "questions": [{"question_id": "...", "question": "...",
                       "choices": ["...", "...", "...", "..."], "answer": "C",
                       "category": "destination"}]}]}

A clip lasts as long as its video (probed); `interval` is [start_s, end_s] (a notification
moment is [t, t]); an event's id defaults to "<clip_id>-<n>"; an ST event may name the
`state` the device was in ("on"), as an LT event names its `location`; `levels` defaults to
both; `track` ("Daily" or "Sci", the paper's two tracks) is optional.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.frames import probe_duration_ms
from apmbench.harness.suites.layout_file import read_layout_file

CLIPS = "proactegomem_clips.json"
FORMAT = "proactegomem-clips"
VERSION = 1
LETTERS = ("A", "B", "C", "D")


def _field(obj: Mapping[str, object], key: str, where: str) -> Any:
    if key not in obj:
        raise DatasetError(f"{where}: missing field {key!r}")
    return obj[key]


def _event(e: object, where: str, clip_id: str, n: int) -> dict[str, object]:
    if not isinstance(e, dict):
        raise DatasetError(f"{where}: an event must be an object")
    interval = _field(e, "interval", where)
    if (
        not isinstance(interval, list)
        or len(interval) != 2
        or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in interval)
    ):
        raise DatasetError(f"{where}: 'interval' must be [start_s, end_s], got {interval!r}")
    out = {
        "event_id": str(e.get("event_id", f"{clip_id}-{n}")),
        "object": _field(e, "object", where),
        "start_s": float(interval[0]),
        "end_s": float(interval[1]),
    }
    # An LT event's destination and an ST event's state are what the Oracle Memory lists;
    # dropped, it showed "not annotated" (the dataset loader checks which task each is for).
    for key in ("location", "state"):
        if key in e:
            out[key] = e[key]
    return out


def _question(q: object, where: str) -> dict[str, object]:
    if not isinstance(q, dict):
        raise DatasetError(f"{where}: a question must be an object")
    choices = _field(q, "choices", where)
    if not isinstance(choices, list) or len(choices) != len(LETTERS):
        raise DatasetError(f"{where}: 'choices' must list four choice texts (A, B, C, D)")
    return {
        "question_id": _field(q, "question_id", where),
        "question": _field(q, "question", where),
        "choices": dict(zip(LETTERS, choices, strict=True)),
        "answer": _field(q, "answer", where),
        "category": str(q.get("category", "")),
    }


def _clip(root: Path, c: object, k: int) -> dict[str, object]:
    where = f"{CLIPS}: clips[{k}]"
    if not isinstance(c, dict):
        raise DatasetError(f"{where}: must be an object")
    cid = str(_field(c, "clip_id", where))
    where = f"{CLIPS}: clip {cid!r}"
    video = str(_field(c, "video", where))
    path = root / video
    if not path.is_file():
        raise DatasetError(f"{where}: video file {video!r} does not exist under {root}")
    events = _field(c, "events", where)
    if not isinstance(events, list):
        raise DatasetError(f"{where}: 'events' must be a list")
    return {
        "clip_id": cid,
        "task": _field(c, "task", where),
        "video": video,
        "duration_s": probe_duration_ms(path) / 1000.0,
        "events": [_event(e, f"{where} events[{n}]", cid, n) for n, e in enumerate(events)],
        "questions": [
            _question(q, f"{where} questions[{n}]")
            for n, q in enumerate(c.get("questions", []) or [])
        ],
    }


def dataset_doc(root: Path) -> dict[str, object]:
    """The clips layout as the dataset.json document it stands for."""
    path = root / CLIPS
    doc = read_layout_file(path, FORMAT, VERSION)
    clips = _field(doc, "clips", str(path))
    if not isinstance(clips, list):
        raise DatasetError(f"{path}: 'clips' must be a list")
    out = {
        "benchmark": "proactegomem",
        "format_version": 1,
        "name": str(doc.get("name", root.name)),
        "clips": [_clip(root, c, k) for k, c in enumerate(clips)],
    }
    for key in ("levels", "track"):
        if key in doc:
            out[key] = doc[key]
    return out
