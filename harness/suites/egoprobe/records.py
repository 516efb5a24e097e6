"""EgoProbe from construction records on Ego4D-style videos (the records layout).

The paper (EgoProbe, appendix B.1) builds every probe from a construction record holding
"the source question, canonical answer, target evidence, and stream identity", on QaEgo4D
(QA aligned with Ego4D temporal evidence) and EgoLife; its data engine then adds a delayed
query time, related events with event-grounded distractors, four options and, for Echo, an
R1/R2 dialogue. This layout takes those records as they come out of that engine, with
QaEgo4D/Ego4D's clock: seconds from the start of each video file.

    DIR/egoprobe_records.json
    DIR/videos/<video_uid>.mp4         (any path under DIR, named by "file")

egoprobe_records.json (docs/real-data.md has a filled example):

    {"format": "egoprobe-records", "version": 1, "name": "my-probes",
     "videos": [{"video_uid": "...", "file": "videos/....mp4"}],
     "records": [{
        "question_id": "...", "video_uid": "...",
        "question": "...", "options": ["...", "...", "...", "..."], "answer": "B",
        "query_sec": 610.0,
        "evidence": [[12.0, 15.5]],
        "related_events": [{"event_id": "...", "start_sec": 300.0, "end_sec": 304.0,
                            "option": "C"}],
        "dialogue": {"r1": "Did I ...?", "r2": "..."}}]}

Each video is one stream of one segment on DAY1 from 00:00:00 to its probed length (an
EgoLife stream of several days needs dataset.json, whose segments carry day clocks).
`options` are A-D in order; `evidence` lists the target's segments, the latest end
setting the recall interval (appendix B.1; each segment is kept as the target's, in time
order); an optional `question_type` is one of section 3.4's kinds (location, identity,
source_placement, activity, attributes); a record with related events is an Echo question,
one without a Base question; a `dialogue` is allowed on Echo questions only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.frames import probe_duration_ms
from apmbench.harness.media.timecode import format_ms
from apmbench.harness.suites.layout_file import read_layout_file

RECORDS = "egoprobe_records.json"
FORMAT = "egoprobe-records"
VERSION = 1
LETTERS = ("A", "B", "C", "D")


def _seconds(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise DatasetError(f"{where}: must be a number of seconds (>= 0), got {value!r}")
    return round(float(value) * 1000)


def _field(obj: Mapping[str, object], key: str, where: str) -> Any:
    if key not in obj:
        raise DatasetError(f"{where}: missing field {key!r}")
    return obj[key]


def _video(root: Path, v: object, k: int) -> dict[str, object]:
    where = f"{RECORDS}: videos[{k}]"
    if not isinstance(v, dict):
        raise DatasetError(f"{where}: must be an object")
    uid, file = _field(v, "video_uid", where), _field(v, "file", where)
    path = root / str(file)
    if not path.is_file():
        raise DatasetError(f"{where}: video file {file!r} does not exist under {root}")
    end = probe_duration_ms(path)
    segment = {"segment_id": str(uid), "file": str(file), "start": format_ms(0),
               "end": format_ms(end)}  # fmt: skip
    return {"video_id": str(uid), "title": str(v.get("title", uid)), "segments": [segment]}


def _question(r: object, k: int) -> tuple[dict[str, object], dict[str, object] | None]:
    where = f"{RECORDS}: records[{k}]"
    if not isinstance(r, dict):
        raise DatasetError(f"{where}: must be an object")
    qid = str(_field(r, "question_id", where))
    where = f"{RECORDS}: record {qid}"
    options = _field(r, "options", where)
    if not isinstance(options, list) or len(options) != len(LETTERS):
        raise DatasetError(f"{where}: 'options' must list four option texts (A, B, C, D)")
    evidence = _field(r, "evidence", where)
    if not isinstance(evidence, list) or not evidence:
        raise DatasetError(f"{where}: 'evidence' must list [start_sec, end_sec] segments")
    spans = []
    for n, span in enumerate(evidence):
        if not isinstance(span, list) or len(span) != 2:
            raise DatasetError(f"{where}: evidence[{n}] must be [start_sec, end_sec]")
        spans.append(tuple(_seconds(x, f"{where} evidence[{n}]") for x in span))
    related = []
    for n, e in enumerate(r.get("related_events", []) or []):
        ew = f"{where} related_events[{n}]"
        if not isinstance(e, dict):
            raise DatasetError(f"{ew}: must be an object")
        related.append(
            {"event_id": str(e.get("event_id", f"{qid}-related-{n}")),
             "start": format_ms(_seconds(_field(e, "start_sec", ew), f"{ew} start_sec")),
             "end": format_ms(_seconds(_field(e, "end_sec", ew), f"{ew} end_sec")),
             "option": e.get("option")}
        )  # fmt: skip
    question = {
        "question_id": qid,
        "subset": "echo" if related else "base",
        "video_id": str(_field(r, "video_uid", where)),
        "query_time": format_ms(_seconds(_field(r, "query_sec", where), f"{where} query_sec")),
        "question": _field(r, "question", where),
        "options": dict(zip(LETTERS, options, strict=True)),
        "answer": _field(r, "answer", where),
        # Every evidence segment as the target (the loader checks their order); one span
        # around them all had counted the gap between them as evidence.
        "target": [{"start": format_ms(s), "end": format_ms(e)} for s, e in spans],
        "related_events": related,
    }  # fmt: skip
    if "question_type" in r:
        question["question_type"] = r["question_type"]  # the loader checks the kind
    d = r.get("dialogue")
    if d is None:
        return question, None
    if not isinstance(d, dict):
        raise DatasetError(f"{where}: 'dialogue' must be an object with r1 and r2")
    dialogue: dict[str, object] = {
        "dialogue_id": f"{qid}-dialogue",
        "parent": qid,
        "r1": {"question": _field(d, "r1", f"{where} dialogue"), "answer": "yes"},
        "r2": {"question": _field(d, "r2", f"{where} dialogue")},
    }
    return question, dialogue


def dataset_doc(root: Path) -> dict[str, object]:
    """The records layout as the dataset.json document it stands for."""
    path = root / RECORDS
    doc = read_layout_file(path, FORMAT, VERSION)
    videos = _field(doc, "videos", str(path))
    records = _field(doc, "records", str(path))
    if not isinstance(videos, list) or not isinstance(records, list):
        raise DatasetError(f"{path}: 'videos' and 'records' must be lists")
    pairs = [_question(r, k) for k, r in enumerate(records)]
    return {
        "benchmark": "egoprobe",
        "format_version": 1,
        "name": str(doc.get("name", root.name)),
        "videos": [_video(root, v, k) for k, v in enumerate(videos)],
        "questions": [q for q, _ in pairs],
        "dialogues": [d for _, d in pairs if d is not None],
    }
