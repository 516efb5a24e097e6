"""The EgoProbe dataset format: long videos, questions at query times, and two-turn dialogues.

One `dataset.json` ("benchmark": "egoprobe") holds everything:

- videos: one stream each, recorded in segments with gaps between them (a
  segment is one video file placed on the stream's clock); each segment
  becomes a session of the shared timeline;
- questions: single-turn, four options, one correct; the subset ("base": no
  related event, "echo": at least one), the query time, the target event's
  evidence interval, the related events (each with the option it supports,
  if any: an event-grounded distractor), which intervene: each lies between
  the end of the target evidence and the query time;
- dialogues: R1 (a yes/no question about the pattern the target shares with
  its related events, affirmative by construction) and R2 (the parent
  question as a follow-up: same options, same answer, same query time).

Times are "DAY<d> HH:MM:SS[.fff]" on the stream's clock (DAY1 00:00:00 is 0).
The recall interval is the query time minus the end of the target evidence.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.timecode import format_ms, to_ms
from apmbench.harness.media.timeline import Session, Trajectory

BENCHMARK = "egoprobe"
FORMAT_VERSION = 1
OPTION_IDS = ("A", "B", "C", "D")
SUBSETS = ("base", "echo")
QUESTION_TYPES = ("location", "identity", "source_placement", "activity", "attributes")
"""Section 3.4's kinds: location, entity identity, object source and placement, activity
and event context, attributes and states."""

# Recall buckets of the paper (section 3.3): upper bounds in seconds, the last open.
BUCKETS: tuple[tuple[str, float], ...] = (
    ("Short", 3 * 60.0),
    ("Medium", 30 * 60.0),
    ("Long", 12 * 3600.0),
    ("Ultra-long", float("inf")),
)
BUCKET_NAMES = tuple(name for name, _ in BUCKETS)


def bucket_of(recall_s: float) -> str:
    for name, upper in BUCKETS:
        if recall_s < upper:
            return name
    return BUCKETS[-1][0]


_STAMP = re.compile(r"^(DAY\d+) (\S+)$")


def parse_time(value: object, where: str) -> int:
    if not isinstance(value, str) or not (m := _STAMP.match(value)):
        raise DatasetError(f"{where}: {value!r} is not a time of the form 'DAY1 08:00:00'")
    try:
        return to_ms(m.group(1), m.group(2))
    except DatasetError as e:
        raise DatasetError(f"{where}: {e}") from None


@dataclass(frozen=True)
class RelatedEvent:
    event_id: str
    start_ms: int
    end_ms: int
    option_id: str | None
    """The option this event supports (an event-grounded distractor); None: it supports the
    target's own answer, so it is context only."""


@dataclass(frozen=True)
class Question:
    question_id: str
    subset: str
    video_id: str
    session_index: int
    time_ms: int
    question: str
    options: tuple[tuple[str, str], ...]
    answer: str
    target_start_ms: int
    target_end_ms: int
    related: tuple[RelatedEvent, ...]
    question_type: str = ""
    """One of QUESTION_TYPES when the dataset says (section 3.4's five kinds), else ""."""
    target_segments: tuple[tuple[int, int], ...] = ()
    """The target's evidence segments in order (appendix B.1: evidence may be several
    segments); the recall interval runs from the end of the last."""

    @property
    def recall_s(self) -> float:
        return (self.time_ms - self.target_end_ms) / 1000.0

    @property
    def bucket(self) -> str:
        return bucket_of(self.recall_s)

    @property
    def event_count(self) -> int:
        """Related events supporting an alternative answer (the paper's Table 4/8 key)."""
        return sum(e.option_id is not None for e in self.related)

    @property
    def distractors(self) -> tuple[str, ...]:
        """The distinct event-grounded incorrect options."""
        return tuple(sorted({e.option_id for e in self.related if e.option_id is not None}))


@dataclass(frozen=True)
class Dialogue:
    dialogue_id: str
    parent: Question
    r1_question: str
    r2_question: str


@dataclass(frozen=True)
class Dataset:
    root: Path
    name: str
    content_hash: str
    trajectories: tuple[Trajectory, ...]
    questions: tuple[Question, ...]
    dialogues: tuple[Dialogue, ...]

    def questions_of(self, video_id: str) -> list[Question]:
        return [q for q in self.questions if q.video_id == video_id]

    def dialogues_of(self, video_id: str) -> list[Dialogue]:
        return [d for d in self.dialogues if d.parent.video_id == video_id]


def _req(
    obj: Mapping[str, object], key: str, where: str, kind: type | tuple[type, ...] = str
) -> Any:
    if key not in obj:
        raise DatasetError(f"{where}: missing field {key!r}")
    value = obj[key]
    if kind is str and (not isinstance(value, str) or not value.strip()):
        raise DatasetError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    if kind is not str and not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DatasetError(f"{where}: {key!r} must be a {names}, got {value!r}")
    return value


def _video(root: Path, v: Any, i: int, need_files: bool = True) -> Trajectory:
    where = f"videos[{i}]"
    if not isinstance(v, dict):
        raise DatasetError(f"{where}: must be an object")
    vid = _req(v, "video_id", where)
    where = f"video {vid}"
    segments = _req(v, "segments", where, list)
    if not segments:
        raise DatasetError(f"{where}: has no segments")
    sessions: list[Session] = []
    for k, s in enumerate(segments):
        sw = f"{where} segments[{k}]"
        if not isinstance(s, dict):
            raise DatasetError(f"{sw}: must be an object")
        sid = _req(s, "segment_id", sw)
        start = parse_time(_req(s, "start", sw), f"{sw} start")
        end = parse_time(_req(s, "end", sw), f"{sw} end")
        if end <= start:
            raise DatasetError(f"{sw}: end {s['end']} is not after start {s['start']}")
        if sessions and start < sessions[-1].end_ms:
            raise DatasetError(
                f"{sw}: starts at {s['start']}, before the previous segment ends "
                f"({format_ms(sessions[-1].end_ms)}); segments must be in order, not overlapping"
            )
        path = root / _req(s, "file", sw)
        if need_files and not path.is_file():
            raise DatasetError(f"{sw}: video file {s['file']!r} does not exist under {root}")
        day = format_ms(start).split()[0]
        sessions.append(Session(sid, day, start, end, path))
    if len({s.session_id for s in sessions}) != len(sessions):
        raise DatasetError(f"{where}: segment ids repeat")
    return Trajectory(vid, str(v.get("title", vid)), tuple(sessions))


def _segment_at(t: Trajectory, time_ms: int, where: str) -> int:
    for i, s in enumerate(t.sessions):
        if s.start_ms < time_ms <= s.end_ms:
            return i
    raise DatasetError(
        f"{where}: query time {format_ms(time_ms)} is not inside a recorded segment of video "
        f"{t.trajectory_id} (a question is asked while the stream is recording)"
    )


def _options(q: Mapping[str, object], where: str) -> tuple[tuple[str, str], ...]:
    options = _req(q, "options", where, dict)
    if sorted(options) != list(OPTION_IDS):
        raise DatasetError(f"{where}: options must be exactly A, B, C, D, got {sorted(options)}")
    texts = [options[o] for o in OPTION_IDS]
    if any(not isinstance(x, str) or not x.strip() for x in texts):
        raise DatasetError(f"{where}: every option must be a non-empty string")
    if len(set(texts)) != len(texts):
        raise DatasetError(f"{where}: two options have the same text")
    return tuple(zip(OPTION_IDS, texts, strict=True))


def _target(q: Mapping[str, object], where: str) -> tuple[tuple[int, int], ...]:
    """The target evidence: one {"start", "end"} or a list of them, in order, disjoint."""
    raw = _req(q, "target", where, (dict, list))
    parts = [raw] if isinstance(raw, dict) else raw
    if not parts:
        raise DatasetError(f"{where}: 'target' lists no evidence segment")
    out: list[tuple[int, int]] = []
    for k, part in enumerate(parts):
        tw = f"{where} target" if isinstance(raw, dict) else f"{where} target[{k}]"
        if not isinstance(part, dict):
            raise DatasetError(f"{tw}: must be an object with 'start' and 'end'")
        start = parse_time(_req(part, "start", tw), f"{tw} start")
        end = parse_time(_req(part, "end", tw), f"{tw} end")
        if end < start:
            raise DatasetError(f"{tw}: end {part['end']} is before start {part['start']}")
        if out and start < out[-1][1]:
            raise DatasetError(
                f"{tw}: starts at {part['start']}, before the previous segment ends; list the "
                "evidence segments in time order, not overlapping"
            )
        out.append((start, end))
    return tuple(out)


def _question(q: Any, i: int, videos: Mapping[str, Trajectory]) -> Question:
    where = f"questions[{i}]"
    if not isinstance(q, dict):
        raise DatasetError(f"{where}: must be an object")
    qid = _req(q, "question_id", where)
    where = f"question {qid}"
    subset = _req(q, "subset", where)
    if subset not in SUBSETS:
        raise DatasetError(f"{where}: subset {subset!r} must be one of {', '.join(SUBSETS)}")
    vid = _req(q, "video_id", where)
    if vid not in videos:
        raise DatasetError(f"{where}: video_id {vid!r} is not in videos")
    time_ms = parse_time(_req(q, "query_time", where), f"{where} query_time")
    session_index = _segment_at(videos[vid], time_ms, where)
    options = _options(q, where)
    answer = _req(q, "answer", where)
    if answer not in OPTION_IDS:
        raise DatasetError(f"{where}: answer {answer!r} must be one of A, B, C, D")
    segments = _target(q, where)
    t_start, t_end = segments[0][0], segments[-1][1]
    if not t_end < time_ms:
        raise DatasetError(
            f"{where}: the target evidence must end before the query time "
            f"(target ends {format_ms(t_end)}, query {q['query_time']})"
        )
    target = {"end": format_ms(t_end)}
    qtype = q.get("question_type", "")
    if qtype not in ("", *QUESTION_TYPES):
        raise DatasetError(
            f"{where}: question_type {qtype!r} must be one of {', '.join(QUESTION_TYPES)}"
        )
    related: list[RelatedEvent] = []
    for k, e in enumerate(_req(q, "related_events", where, list)):
        ew = f"{where} related_events[{k}]"
        if not isinstance(e, dict):
            raise DatasetError(f"{ew}: must be an object")
        start = parse_time(_req(e, "start", ew), f"{ew} start")
        end = parse_time(_req(e, "end", ew), f"{ew} end")
        if not t_end <= start <= end < time_ms:
            raise DatasetError(
                f"{ew}: a related event must lie between the end of the target evidence and "
                f"the query time (appendix B.2: it intervenes in the recall interval); got "
                f"{e['start']}-{e['end']}, target ends {target['end']}, query {q['query_time']}"
            )
        option = e.get("option")
        if option is not None and (option not in OPTION_IDS or option == answer):
            raise DatasetError(
                f"{ew}: option {option!r} must be an incorrect option id (or null when the "
                "event supports the target's own answer)"
            )
        related.append(RelatedEvent(_req(e, "event_id", ew), start, end, option))
    if subset == "echo" and not any(e.option_id for e in related):
        raise DatasetError(f"{where}: an echo question needs a related event with a distractor")
    if subset == "base" and related:
        raise DatasetError(f"{where}: a base question has no related events")
    return Question(
        qid,
        subset,
        vid,
        session_index,
        time_ms,
        _req(q, "question", where),
        options,
        answer,
        t_start,
        t_end,
        tuple(related),
        str(qtype),
        segments,
    )


def _dialogue(d: Any, i: int, questions: Mapping[str, Question]) -> Dialogue:
    where = f"dialogues[{i}]"
    if not isinstance(d, dict):
        raise DatasetError(f"{where}: must be an object")
    did = _req(d, "dialogue_id", where)
    where = f"dialogue {did}"
    parent = _req(d, "parent", where)
    if parent not in questions:
        raise DatasetError(f"{where}: parent {parent!r} is not a question id")
    if questions[parent].subset != "echo":
        raise DatasetError(f"{where}: parent {parent} is not an echo question")
    r1 = _req(d, "r1", where, dict)
    r2 = _req(d, "r2", where, dict)
    if r1.get("answer", "yes") != "yes":
        raise DatasetError(f"{where}: r1 answer must be 'yes' (R1 asks about an observed event)")
    return Dialogue(
        did,
        questions[parent],
        _req(r1, "question", f"{where} r1"),
        _req(r2, "question", f"{where} r2"),
    )


def _hash(root: Path, videos: Sequence[Path]) -> str:
    """The annotations in full; each video by name, size and first MiB."""
    annotations = root / "dataset.json"
    if not annotations.is_file():
        from apmbench.harness.suites.egoprobe.records import RECORDS

        annotations = root / RECORDS
    digest = hashlib.sha256(annotations.read_bytes())
    for path in sorted(set(videos)):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(str(path.stat().st_size).encode())
        with path.open("rb") as f:
            digest.update(f.read(1 << 20))
    return digest.hexdigest()


PUBLIC_QUESTION_KEYS = ("question_id", "video_id", "query_time", "question", "options")
"""What a run needs of a question; the rest (answer, evidence, related events, subset) is
withheld from a public part (`apmbench-grpc split`)."""


def fill_withheld(doc: dict[str, Any]) -> dict[str, Any]:
    """A public part's questions with the same stand-in labels each, so the loader and the
    planner accept them: answer A, an Echo question whose target and one distractor event end
    just before the query. Nothing of them is scored: `score --labels` grades with the real
    ones."""
    questions = []
    for q in doc.get("questions", []) or []:
        if not isinstance(q, dict) or not isinstance(q.get("query_time"), str):
            questions.append(q)
            continue
        t = parse_time(q["query_time"], f"question {q.get('question_id')!r} query_time")
        questions.append(
            {
                **q,
                "subset": "echo",
                "answer": "A",
                "target": {"start": format_ms(max(0, t - 2)), "end": format_ms(max(0, t - 2))},
                "related_events": [
                    {"event_id": "withheld", "start": format_ms(t - 1), "end": format_ms(t - 1),
                     "option": "B"}
                ],
            }
        )  # fmt: skip
    return {**doc, "questions": questions}


def read_doc(root: Path) -> dict[str, Any]:
    """dataset.json, or the records layout converted to it (`records`)."""
    path = root / "dataset.json"
    if not path.is_file():
        from apmbench.harness.suites.egoprobe import records

        if (root / records.RECORDS).is_file():
            return records.dataset_doc(root)
        raise DatasetError(f"{root} has no dataset.json (nor {records.RECORDS})")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise DatasetError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise DatasetError(f"{path} must hold a JSON object")
    return doc


def load_dataset(root: Path, need_files: bool = True) -> Dataset:
    """`need_files=False`: the labels alone, on a machine without the videos (`score
    --labels`)."""
    root = Path(root)
    path = root / "dataset.json"
    doc = read_doc(root)
    if not isinstance(doc, dict) or doc.get("benchmark") != BENCHMARK:
        raise DatasetError(f"{path}: 'benchmark' must be {BENCHMARK!r}")
    if doc.get("format_version") != FORMAT_VERSION:
        raise DatasetError(
            f"{path}: format_version {doc.get('format_version')!r} is not {FORMAT_VERSION}"
        )
    if doc.get("labels") == "withheld":
        doc = fill_withheld(doc)
    videos = [
        _video(root, v, i, need_files) for i, v in enumerate(_req(doc, "videos", str(path), list))
    ]
    by_id = {t.trajectory_id: t for t in videos}
    if len(by_id) != len(videos):
        raise DatasetError(f"{path}: video ids repeat")
    questions = [
        _question(q, i, by_id) for i, q in enumerate(_req(doc, "questions", str(path), list))
    ]
    q_by_id = {q.question_id: q for q in questions}
    if len(q_by_id) != len(questions):
        raise DatasetError(f"{path}: question ids repeat")
    dialogues = [_dialogue(d, i, q_by_id) for i, d in enumerate(doc.get("dialogues", []) or [])]
    if len({d.dialogue_id for d in dialogues}) != len(dialogues):
        raise DatasetError(f"{path}: dialogue ids repeat")
    if len({d.dialogue_id for d in dialogues} & set(q_by_id)):
        raise DatasetError(f"{path}: a dialogue id repeats a question id")
    files = [s.video for t in videos for s in t.sessions if s.video is not None]
    return Dataset(
        root,
        str(doc.get("name", root.name)),
        _hash(root, files if need_files else []),
        tuple(videos),
        tuple(questions),
        tuple(dialogues),
    )
