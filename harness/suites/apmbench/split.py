"""APM-Bench's split (project layout): the public part keeps dataset.json's trajectories and
videos and, of each candidate, what goes on the wire: the question and options, the query
time, the registration turn, and each probe's time (heartbeats) or interval (windows) with
no word of which are positive. ERA and RCR, which probe at heartbeats, show no window (their
ideal window says which heartbeat is the positive one), and ERA's heartbeats are followed by
decoys (`era_decoys`: its positive is always the last). The correct option, the evidence,
the availability of evidence, every reference response and silence reason, which probe is
the positive one, and the generator (its seed regenerates every label) stay in the private
part.

`fill_withheld` gives a public candidate stand-in labels the loader accepts (option A,
the earliest probe positive, evidence at the query) and `instance_ids` pairs each public
probe id with its labelled id (same candidate, same time), for `score --labels`.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

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
WINDOW_TASKS = ("MPA", "PRM", "TPG")
"""The tasks whose probes are windows: only theirs are shown, unlabelled, in the public part."""


def _only(obj: Any, keys: tuple[str, ...]) -> Any:
    return {k: obj[k] for k in keys if k in obj} if isinstance(obj, dict) else obj


def _time_key(obj: Mapping[str, Any], key: str) -> tuple[str, str]:
    return (str(obj.get("day_id", "")), str(obj.get(key, "")))


def _clock(ms: int) -> str:
    s = ms // 1000
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def _ms(clock: str) -> int:
    h, m, s = (int(x) for x in clock.split(":"))
    return ((h * 60 + m) * 60 + s) * 1000


def era_decoys(raw: Mapping[str, Any], session_end: str, stop: float) -> list[dict[str, Any]]:
    """Unlabelled heartbeats after an ERA candidate's last one, for its public part.

    ERA's positive is the first checkpoint after the event, so it is always the last
    heartbeat a candidate has: shown alone, the public part would say which one it is.
    The decoys continue the generator's renewal process (a checkpoint every 3-9 s) for a
    geometric number of steps with the stopping probability `stop` that the dataset's
    own number of negatives before the positive shows (`era_stop`): the sum of two such
    counts is uniform in its parts, so the positive's rank among the public heartbeats
    says nothing of it. Decoys are asked on the wire like any heartbeat and dropped
    before scoring (the private part lists them). Seeded by the candidate id."""
    rng = random.Random(hashlib.sha256(str(raw.get("candidate_id")).encode()).digest())
    last = raw["positive_heartbeat"]
    t, end = _ms(str(last["query_time"])), _ms(session_end) - 1000
    out: list[dict[str, Any]] = []
    while rng.random() >= stop and (t := t + rng.randint(3, 9) * 1000) <= end:
        out.append(
            {"session_id": last["session_id"], "day_id": last["day_id"], "query_time": _clock(t)}
        )
    return out


def era_stop(candidates: list[Mapping[str, Any]]) -> float:
    """The geometric stopping probability of ERA's negatives-before-the-positive count,
    fitted to the dataset (1 / (1 + mean)); 0.5 when it has no ERA candidate."""
    counts = [
        len(c.get("negative_heartbeats") or []) for c in candidates if c.get("task_type") == "ERA"
    ]
    return 1 / (1 + sum(counts) / len(counts)) if counts else 0.5


def public_candidate(
    raw: Mapping[str, Any], session_end: str | None = None, stop: float = 0.5
) -> dict[str, Any]:
    """What a run needs of one candidate (its candidate_id made explicit by the caller);
    `session_end`, the end_time of an ERA candidate's session, and `stop` place its decoys."""
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
        if task == "ERA" and session_end is not None:
            beats += era_decoys(raw, session_end, stop)
        out["heartbeats"] = sorted(beats, key=lambda b: _time_key(b, "query_time"))
        if task == "ERA":
            out.update(_only(raw, ("question", "choices")))
    if task not in WINDOW_TASKS:
        # ERA and RCR probe at heartbeats; their ideal_response_window is a label (the
        # positive heartbeat lies inside it) that no run needs.
        return out
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
    # A rendered recording's spec names the generator's seed, which regenerates every label:
    # the public part keeps the intervening recordings that are videos (Raw Lifelong).
    kept["trajectories"] = [
        {**t, "intervening": [s for s in t["intervening"] if "render" not in s]}
        if isinstance(t, dict) and isinstance(t.get("intervening"), list)
        else t
        for t in doc.get("trajectories", [])
    ]
    withheld.write_doc(public, {**kept, **withheld.public_name(doc), "labels": withheld.WITHHELD})
    ends = {
        (str(t.get("trajectory_id")), str(s.get("session_id"))): str(s.get("end_time"))
        for t in doc.get("trajectories", [])
        for s in t.get("sessions", [])
    }

    def end_of(raw: Mapping[str, Any]) -> str | None:
        beat = raw.get("positive_heartbeat")
        if not isinstance(beat, dict):
            return None
        return ends.get((str(raw.get("trajectory_id")), str(beat.get("session_id"))))

    by_file = {path: _read(path) for path in sorted((root / "candidates").glob("*.json"))}
    for path, items in by_file.items():
        if not isinstance(items, list):
            raise DatasetError(f"{path}: must hold a JSON array of candidates")
    stop = era_stop([c for items in by_file.values() for c in items if isinstance(c, dict)])
    for path, items in by_file.items():
        shown = [
            public_candidate(
                {**raw, "candidate_id": raw.get("candidate_id", f"{path.stem}/{k}")},
                end_of(raw),
                stop,
            )
            for k, raw in enumerate(items)
        ]
        (public / "candidates").mkdir(parents=True, exist_ok=True)
        (public / "candidates" / path.name).write_text(json.dumps(shown, indent=1) + "\n")
        (private / "candidates").mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, private / "candidates" / path.name)
    files = [
        s["video"]
        for t in doc.get("trajectories", [])
        for s in [*t.get("sessions", []), *(t.get("intervening") or [])]
        if isinstance(s.get("video"), str)
    ]
    withheld.copy_media(root, public, files)
    withheld.write_doc(private, doc)


# What `instance_ids` reads of a loaded dataset (dataset.Dataset), stated here: the loader
# imports this module, so importing it back would make a cycle.
class _Probe(Protocol):
    @property
    def probe_id(self) -> str: ...
    @property
    def time_ms(self) -> int: ...
    @property
    def interval_start_ms(self) -> int | None: ...


class _Candidate(Protocol):
    @property
    def candidate_id(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def probes(self) -> Sequence[_Probe]: ...


class _Dataset(Protocol):
    @property
    def candidates(self) -> Sequence[_Candidate]: ...


def instance_ids(public: _Dataset, labelled: _Dataset) -> dict[str, str]:
    """Public probe id -> labelled probe id, where they differ: the same candidate's probes
    paired by time (and interval start); an ERA decoy maps to "" (`withheld.DECOY`)."""
    out: dict[str, str] = {}
    by_id = {c.candidate_id: c for c in labelled.candidates}
    for c in public.candidates:
        twin = by_id.get(c.candidate_id)
        if twin is None or len(twin.probes) > len(c.probes):
            raise DatasetError(f"the split changed candidate {c.candidate_id}'s probes")

        def order(p: _Probe) -> tuple[int, int]:
            return (p.time_ms, p.interval_start_ms or 0)

        theirs_at = {order(p): p for p in twin.probes}
        for mine in c.probes:
            theirs = theirs_at.pop(order(mine), None)
            if theirs is None:
                if twin.task != "ERA":
                    raise DatasetError(f"the split moved a probe of candidate {c.candidate_id}")
                out[mine.probe_id] = withheld.DECOY
            elif mine.probe_id != theirs.probe_id:
                out[mine.probe_id] = theirs.probe_id
        if theirs_at:
            raise DatasetError(f"the split lost a probe of candidate {c.candidate_id}")
    return out
