"""APM-Bench's split (project layout): the public part keeps dataset.json's trajectories and
videos and, of each candidate, what goes on the wire: the question and options, the query
time, the registration turn, and each probe's time (heartbeats) or interval (windows) with
no word of which are positive. The correct option, the evidence, the availability of
evidence, every reference response and silence reason, which probe is the positive one,
and the generator (its seed regenerates every label) stay in the private part.

`fill_withheld` gives a public candidate stand-in labels the loader accepts (option A,
the earliest probe positive, evidence at the query) and `instance_ids` pairs each public
probe id with its labelled id (same candidate, same time), for `score --labels`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apmbench.harness.errors import DatasetError
from apmbench.harness.suites import withheld
from apmbench.harness.suites.apmbench import tasks

COMMON = ("task_type", "trajectory_id", "candidate_id")
QUESTION = ("question", "choices", "query")
HEARTBEAT = ("session_id", "day_id", "query_time")
WINDOW = ("session_id", "day_id", "start_time", "end_time")
REGISTRATION = ("session_id", "day_id", "registration_time", "registration_text")
HEARTBEATS = ("positive_heartbeat", "negative_heartbeats")
WINDOWS = ("ideal_response_window", "ideal_response_windows", "negative_or_silence_windows")


def _only(obj: Any, keys: tuple[str, ...]) -> Any:
    return {k: obj[k] for k in keys if k in obj} if isinstance(obj, dict) else obj


def _time_key(obj: Mapping[str, Any], key: str) -> tuple[str, str]:
    return (str(obj.get("day_id", "")), str(obj.get(key, "")))


def public_candidate(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What a run needs of one candidate (its candidate_id made explicit by the caller)."""
    task = raw.get("task_type")
    out: dict[str, Any] = _only(raw, COMMON)
    if task in tasks.MCQA_TASKS:
        out.update(_only(raw, QUESTION))
    elif task == tasks.EVIDENCE_AVAILABILITY:
        out.update(_only(raw, (*QUESTION, "original_candidate_id")))
    if "registration_event" in raw:
        out["registration_event"] = _only(raw["registration_event"], REGISTRATION)
    if "positive_heartbeat" in raw:
        beats = [raw["positive_heartbeat"], *(raw.get("negative_heartbeats") or [])]
        beats = [_only(b, HEARTBEAT) for b in beats]
        out["heartbeats"] = sorted(beats, key=lambda b: _time_key(b, "query_time"))
        if task == "ERA":
            out.update(_only(raw, ("question", "choices")))
    windows = [raw[k] for k in ("ideal_response_window",) if k in raw]
    windows += list(raw.get("ideal_response_windows") or [])
    windows += list(raw.get("negative_or_silence_windows") or [])
    if windows:
        shown = [_only(w, WINDOW) for w in windows]
        out["windows"] = sorted(shown, key=lambda w: _time_key(w, "end_time"))
    return out


def fill_withheld(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Stand-in labels for a public candidate; nothing of them is scored."""
    out = dict(raw)
    task = raw.get("task_type")
    if "choices" in raw:
        out["correct_option_id"] = "A"
    if task == tasks.EVIDENCE_AVAILABILITY and isinstance(raw.get("query"), dict):
        q = raw["query"]
        out["evidence_available"] = True
        out["evidence_moments"] = [
            {"session_id": q.get("session_id"), "day_id": q.get("day_id"),
             "start_time": q.get("query_time"), "end_time": q.get("query_time")}
        ]  # fmt: skip
    beats = raw.get("heartbeats")
    if isinstance(beats, list) and beats:
        out["positive_heartbeat"], out["negative_heartbeats"] = beats[0], beats[1:]
    windows = raw.get("windows")
    if isinstance(windows, list) and windows:
        if task == "TPG":
            out["ideal_response_windows"] = windows[:1]
        else:
            out["ideal_response_window"] = windows[0]
        out["negative_or_silence_windows"] = windows[1:]
    return out


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DatasetError(f"cannot read {path}: {e}") from None


def split(root: Path, public: Path, private: Path) -> None:
    if not (root / "dataset.json").is_file():
        raise DatasetError(
            f"{root} is in the release layout: split reads the project layout (dataset.json "
            "and candidates/*.json, README 'Dataset format')"
        )
    doc = _read(root / "dataset.json")
    if not isinstance(doc, dict) or doc.get("labels") == withheld.WITHHELD:
        raise DatasetError(f"{root} is already a public part, or not a dataset")
    kept = {k: v for k, v in doc.items() if k != "generator"}
    withheld.write_doc(public, {**kept, **withheld.public_name(doc), "labels": withheld.WITHHELD})
    for path in sorted((root / "candidates").glob("*.json")):
        items = _read(path)
        if not isinstance(items, list):
            raise DatasetError(f"{path}: must hold a JSON array of candidates")
        shown = [
            public_candidate({**raw, "candidate_id": raw.get("candidate_id", f"{path.stem}/{k}")})
            for k, raw in enumerate(items)
        ]
        (public / "candidates").mkdir(parents=True, exist_ok=True)
        (public / "candidates" / path.name).write_text(json.dumps(shown, indent=1) + "\n")
        (private / "candidates").mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, private / "candidates" / path.name)
    files = [
        s["video"]
        for t in doc.get("trajectories", [])
        for s in t.get("sessions", [])
        if isinstance(s.get("video"), str)
    ]
    withheld.copy_media(root, public, files)
    withheld.write_doc(private, doc)


def instance_ids(public: Any, labelled: Any) -> dict[str, str]:
    """Public probe id -> labelled probe id, where they differ: the same candidate's probes
    paired by time (and interval start)."""
    out: dict[str, str] = {}
    by_id = {c.candidate_id: c for c in labelled.candidates}
    for c in public.candidates:
        twin = by_id.get(c.candidate_id)
        if twin is None or len(twin.probes) != len(c.probes):
            raise DatasetError(f"the split changed candidate {c.candidate_id}'s probes")

        def order(p: Any) -> tuple[int, int]:
            return (p.time_ms, p.interval_start_ms or 0)

        for mine, theirs in zip(
            sorted(c.probes, key=order), sorted(twin.probes, key=order), strict=True
        ):
            if order(mine) != order(theirs):
                raise DatasetError(f"the split moved a probe of candidate {c.candidate_id}")
            if mine.probe_id != theirs.probe_id:
                out[mine.probe_id] = theirs.probe_id
    return out
