"""The ProactEgoMem dataset format: clips, their ground-truth events and memory questions.

One `dataset.json` ("benchmark": "proactegomem"; docs/PROACTEGOMEM.md has an example),
optionally naming its `track` ("Daily" or "Sci", the paper's two):

- clips: one video each (a file under the dataset root, or a synthetic render
  spec), its task ("ST" state tracking or "LT" location tracking) and length;
- events: the ground-truth opportunities of a clip: the object and the moment
  an assistant should act (`start_s`) and, for a tracker, when it should stop
  (`end_s`); an LT event may name the `location` the object was placed at, an
  ST event the `state` the device was in (the Oracle Memory lists either);
- questions: multiple choice (A-D), one correct, about one clip.

Times are clip-local seconds. Every clip is played once per proactive level the
dataset lists ("intervention", "notification"; both by default).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.timeline import Session, Trajectory
from apmbench.harness.suites.proactegomem.tools import LEVELS

BENCHMARK = "proactegomem"
FORMAT_VERSION = 1
OPTION_IDS = ("A", "B", "C", "D")
TASKS = ("ST", "LT", "IC")
TRACKS = ("Daily", "Sci")
"""The paper's two tracks: everyday recordings and wet-lab (co-scientist) recordings."""


@dataclass(frozen=True)
class Event:
    event_id: str
    object: str
    start_s: float
    end_s: float
    location: str = ""
    state: str = ""
    """ST: the state the device was in over the interval ("on", "open"); the Oracle Memory
    lists it."""


@dataclass(frozen=True)
class Question:
    question_id: str
    clip_id: str
    question: str
    choices: tuple[tuple[str, str], ...]
    answer: str
    category: str


@dataclass(frozen=True)
class Clip:
    clip_id: str
    task: str
    duration_s: float
    events: tuple[Event, ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Dataset:
    root: Path
    name: str
    content_hash: str
    trajectories: tuple[Trajectory, ...]
    clips: tuple[Clip, ...]
    levels: tuple[str, ...]
    synthetic: bool
    track: str = ""
    """The paper's track the clips belong to ("Daily" or "Sci"), when the dataset names it."""
    labels_withheld: bool = False
    """A public part of `apmbench-grpc split`: no events, stand-in answers; the plan leaves
    out the Oracle Memory condition, which would show the events."""
    per_step: bool = False
    """The paper's per-step condition (`evaluate --variant per-step`): every step its own
    runtime instance holding only the 10 most recent frames (`plan`)."""

    def clip(self, clip_id: str) -> Clip:
        for c in self.clips:
            if c.clip_id == clip_id:
                return c
        raise KeyError(clip_id)


def _req(obj: Mapping[str, object], key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if key not in obj:
        raise DatasetError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DatasetError(f"{where}: {key!r} must be a {names}, got {value!r}")
    if isinstance(value, str) and not value.strip():
        raise DatasetError(f"{where}: {key!r} must not be empty")
    return value


def _event(raw: object, where: str, duration: float, task: str) -> Event:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: an event must be an object, got {raw!r}")
    start = float(_req(raw, "start_s", where, (int, float)))
    end = float(_req(raw, "end_s", where, (int, float)))
    if not 0 <= start <= end <= duration:
        raise DatasetError(
            f"{where}: needs 0 <= start_s <= end_s <= the clip's duration_s ({duration}), "
            f"got start_s={start}, end_s={end}"
        )
    location = _req(raw, "location", where, str) if "location" in raw else ""
    if location and task != "LT":
        raise DatasetError(f"{where}: 'location' is for LT events, this clip's task is {task}")
    state = _req(raw, "state", where, str) if "state" in raw else ""
    if state and task != "ST":
        raise DatasetError(f"{where}: 'state' is for ST events, this clip's task is {task}")
    eid, obj = _req(raw, "event_id", where, str), _req(raw, "object", where, str)
    return Event(eid, obj, start, end, location, state)


def _question(raw: object, where: str, clip_id: str) -> Question:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: a question must be an object, got {raw!r}")
    choices = _req(raw, "choices", where, dict)
    if tuple(choices) != OPTION_IDS or not all(isinstance(v, str) for v in choices.values()):
        raise DatasetError(
            f"{where}: 'choices' must map exactly A, B, C, D (in order) to strings, got {choices!r}"
        )
    answer = _req(raw, "answer", where, str)
    if answer not in OPTION_IDS:
        raise DatasetError(f"{where}: 'answer' must be one of A, B, C, D, got {answer!r}")
    return Question(
        _req(raw, "question_id", where, str),
        clip_id,
        _req(raw, "question", where, str),
        tuple(choices.items()),
        answer,
        str(raw.get("category", "")),
    )


def fill_withheld(doc: dict[str, Any]) -> dict[str, Any]:
    """A public part's clips with no events and its questions with the same stand-in answer
    (A) each, so the loader and the planner accept them; `score --labels` takes the events
    (each step's ground truth) from the labelled plan and grades with the real answers."""
    clips = []
    for clip in doc.get("clips", []) or []:
        if isinstance(clip, dict):
            if "events" in clip:
                raise DatasetError(
                    f"clip {clip.get('clip_id')!r} of a public part lists events: a public "
                    "part carries none (split the labelled dataset again)"
                )
            clip = {**clip, "events": []}
            if isinstance(clip.get("questions"), list):
                qs = [{**q, "answer": "A"} if isinstance(q, dict) else q for q in clip["questions"]]
                clip = {**clip, "questions": qs}
        clips.append(clip)
    return {**doc, "clips": clips}


def read_doc(root: Path) -> tuple[Path, str, Any]:
    """The annotation file, its text and its document: dataset.json, or the clips layout
    converted to it (`clips`)."""
    path = root / "dataset.json"
    if not path.is_file():
        from apmbench.harness.suites.proactegomem import clips

        if (root / clips.CLIPS).is_file():
            text = (root / clips.CLIPS).read_text(encoding="utf-8")
            return root / clips.CLIPS, text, clips.dataset_doc(root)
    try:
        text = path.read_text(encoding="utf-8")
        return path, text, json.loads(text)
    except OSError as e:
        raise DatasetError(f"cannot read {path}: {e}") from None
    except ValueError as e:
        raise DatasetError(f"{path} is not valid JSON: {e}") from None


def load_dataset(root: Path, need_files: bool = True) -> Dataset:
    """`need_files=False`: the labels alone, on a machine without the videos (`score
    --labels`)."""
    root = Path(root)
    path, text, doc = read_doc(root)
    if not isinstance(doc, dict) or doc.get("benchmark") != BENCHMARK:
        raise DatasetError(f'{path}: needs "benchmark": "{BENCHMARK}"')
    if doc.get("format_version") != FORMAT_VERSION:
        raise DatasetError(f"{path}: format_version must be {FORMAT_VERSION}")
    withheld = doc.get("labels") == "withheld"
    if withheld:
        doc = fill_withheld(doc)
    levels = tuple(doc.get("levels", LEVELS))
    if not levels or any(level not in LEVELS for level in levels):
        raise DatasetError(f"{path}: 'levels' must list some of {', '.join(LEVELS)}")
    raw_clips = _req(doc, "clips", str(path), list)
    if not raw_clips:
        raise DatasetError(f"{path}: 'clips' is empty")
    clips: list[Clip] = []
    trajectories: list[Trajectory] = []
    seen: set[str] = set()
    for n, raw in enumerate(raw_clips):
        where = f"{path}: clips[{n}]"
        if not isinstance(raw, dict):
            raise DatasetError(f"{where}: must be an object")
        cid = _req(raw, "clip_id", where, str)
        if cid in seen:
            raise DatasetError(f"{where}: duplicate clip_id {cid!r}")
        seen.add(cid)
        where = f"{path}: clip {cid!r}"
        task = _req(raw, "task", where, str)
        if task not in TASKS:
            raise DatasetError(f"{where}: task must be one of {', '.join(TASKS)}, got {task!r}")
        duration = float(_req(raw, "duration_s", where, (int, float)))
        if duration < 1:
            raise DatasetError(f"{where}: duration_s must be at least 1 second")
        events = tuple(
            _event(e, f"{where} events[{k}]", duration, task)
            for k, e in enumerate(_req(raw, "events", where, list))
        )
        questions = tuple(
            _question(q, f"{where} questions[{k}]", cid)
            for k, q in enumerate(raw.get("questions", []))
        )
        video, render = raw.get("video"), raw.get("render")
        if (video is None) == (render is None):
            raise DatasetError(f"{where}: give exactly one of 'video' (a path) or 'render'")
        video_path = None
        if video is not None:
            video_path = root / _req(raw, "video", where, str)
            if need_files and not video_path.is_file():
                raise DatasetError(f"{where}: video {video_path} does not exist")
        elif not isinstance(render, dict):
            raise DatasetError(f"{where}: 'render' must be an object")
        session = Session(cid, "DAY1", 0, round(duration * 1000), video_path, render)
        trajectories.append(Trajectory(cid, cid, (session,)))
        clips.append(Clip(cid, task, duration, events, questions))
    track = doc.get("track", "")
    if track not in ("", *TRACKS):
        raise DatasetError(f"{path}: 'track' must be one of {', '.join(TRACKS)}, got {track!r}")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Dataset(
        root,
        str(doc.get("name", root.name)),
        digest,
        tuple(trajectories),
        tuple(clips),
        levels,
        bool(doc.get("synthetic", False)),
        str(track),
        withheld,
    )
