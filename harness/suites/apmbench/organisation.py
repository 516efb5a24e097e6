"""The paper's trajectory-organisation controls (appendix B.6, Fig. 6): `evaluate --variant`.

The APM-Bench paper compares its trajectories with two controls, "all conditions use the
same tasks and scoring":

- **Oracle** "supplies the necessary evidence before the cutoff". Here each candidate runs
  in its own replay from an empty memory that pushes only the frames of its annotated
  evidence (`evidence_moments`, ERA's `answer_evidence_moments`; from `LEAD_MS` before
  each) and, for a decision
  probe or a question annotated with no evidence (one on the current scene), of its own
  scene (its interval, or the `SCENE_MS` before it), with the candidate's turns (ERA
  question, registration) and interval markers as usual; sessions in between are opened
  and closed empty. The paper prints no schema for it: the scene is the project's choice.
- **Raw Lifelong** "adds the recorded video between selected sessions". dataset.json lists
  those recordings per trajectory (`intervening`, each shaped like a session); they are
  played as sessions of their own between the selected ones, asked nothing, with the
  session gaps (and so persistence) between every two recordings.

Evidence Availability keeps its own replay in every organisation: its label says whether
the evidence lies in the two most recent *selected* sessions, which an oracle replay
would change. Under Raw Lifelong its replay starts at the selected session two back and
plays the recordings in between too.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.timeline import Session, Trajectory, Turn
from apmbench.harness.suites import withheld
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.dataset import (
    Candidate,
    Dataset,
    Probe,
    check_video_lengths,
    hash_files,
    load_dataset,
    locate,
    read_session,
)

ORACLE = "oracle"
RAW_LIFELONG = "raw-lifelong"
VARIANTS = {
    ORACLE: "APM-Bench B.6 Oracle: each candidate sees only its annotated evidence and the "
    "scene of each probe, from an empty memory",
    RAW_LIFELONG: "APM-Bench B.6 Raw Lifelong: the video recorded between the selected "
    "sessions is played too (dataset.json's `intervening` recordings)",
}
SCENE_MS = 10_000
"""Oracle: how much video before a heartbeat probe (which has no interval of its own) shows
its current scene."""

LEAD_MS = 1_000
"""Oracle: each evidence span is pushed from this long before its annotated start, so that
a change the evidence shows (an object put down at its first second) is seen happening:
one frame before it at 1 FPS."""

Span = tuple[int, int]
"""A stretch of the trajectory clock, [start, end] in ms."""


def load_organised(root: Path, name: str) -> Dataset:
    """The dataset at `root` (with its media) in the organisation `name`."""
    dataset = load_dataset(root)
    if name == ORACLE and withheld.is_public(root):
        raise DatasetError(
            f"{root} is a public part: the Oracle organisation plays each candidate's "
            "annotated evidence, which a public part withholds; run it on the labelled dataset"
        )
    if name == ORACLE:
        by_id = {t.trajectory_id: t for t in dataset.trajectories}
        for c in dataset.candidates:  # refuse a candidate without its evidence now, not mid-run
            if c.task != tasks.EVIDENCE_AVAILABILITY:
                oracle_spans(c, by_id[c.trajectory_id])
        return replace(dataset, organisation=name)
    if name == RAW_LIFELONG:
        trajectories, candidates = _raw_lifelong(root, dataset.trajectories, dataset.candidates)
        added = [s for t in trajectories for s in t.sessions if s.intervening]
        videos = sorted({s.video for s in added if s.video is not None})
        missing = [str(v) for v in videos if not v.is_file()]
        if missing:
            raise DatasetError("intervening recordings not found: " + ", ".join(missing))
        check_video_lengths([Trajectory("intervening", "", tuple(added))])
        # Their videos join the identity; dataset.json, which lists them, is in it already.
        content_hash = (
            hashlib.sha256(
                (dataset.content_hash + hash_files(root, [], videos)).encode()
            ).hexdigest()
            if videos
            else dataset.content_hash
        )
        return replace(
            dataset,
            trajectories=trajectories,
            candidates=tuple(candidates),
            content_hash=content_hash,
            organisation=name,
        )
    raise DatasetError(f"unknown organisation {name!r}: use one of {', '.join(VARIANTS)}")


# -- Oracle -----------------------------------------------------------------------------


def _moments(c: Candidate, trajectory: Trajectory, key: str) -> list[tuple[int, Span]]:
    out: list[tuple[int, Span]] = []
    for k, moment in enumerate(c.raw.get(key) or []):
        where = f"{c.candidate_id} {key}[{k}]"
        if not isinstance(moment, dict):
            raise DatasetError(f"{where}: must be an object with session_id, start and end")
        index, start = locate(trajectory, moment, "start_time", where)
        _, end = locate(trajectory, moment, "end_time", where)
        lead = max(trajectory.sessions[index].start_ms, start - LEAD_MS)
        out.append((index, (lead, end)))
    return out


def oracle_spans(
    c: Candidate, trajectory: Trajectory, probes: Sequence[Probe] | None = None
) -> list[tuple[int, Span]]:
    """What an Oracle replay of `probes` (default: all of `c`'s) pushes: (session index,
    span) of the candidate's evidence that begins before the last of them, and of each
    one's scene."""
    key = "answer_evidence_moments" if c.task == "ERA" else "evidence_moments"
    evidence = _moments(c, trajectory, key)
    if c.task in ("ERA", "MPA", "TPG") and not evidence:
        raise DatasetError(
            f"{c.candidate_id}: the Oracle organisation needs its {key} (the evidence it "
            "supplies); add them or evaluate without --variant oracle"
        )
    asked = c.probes if probes is None else probes
    last = max(p.time_ms for p in asked)
    evidence = [(index, span) for index, span in evidence if span[0] <= last]
    scenes: list[tuple[int, Span]] = []
    # A question's evidence, where annotated, is all it needs; one without (a question on
    # the current scene: a count, a screen, a layout) and every decision probe see the
    # scene before they are asked.
    if c.task not in tasks.MCQA_TASKS or not evidence:
        for p in asked:
            start = p.interval_start_ms if p.interval_start_ms is not None else p.time_ms - SCENE_MS
            session = trajectory.sessions[p.session_index]
            scenes.append((p.session_index, (max(start, session.start_ms), p.time_ms)))
    return evidence + scenes


def keeps(spans: Sequence[Span]) -> Callable[[int], bool]:
    """A `Segment.keep_frame` that admits exactly the frames inside `spans`."""
    bounds = tuple(sorted(spans))

    def keep(time_ms: int) -> bool:
        return any(start <= time_ms <= end for start, end in bounds)

    return keep


# -- Raw Lifelong -----------------------------------------------------------------------


def _raw_lifelong(
    root: Path, trajectories: Sequence[Trajectory], candidates: Sequence[Candidate]
) -> tuple[tuple[Trajectory, ...], list[Candidate]]:
    path = root / "dataset.json"
    if not path.is_file():
        raise DatasetError(
            f"{root}: the Raw Lifelong organisation needs dataset.json's `intervening` "
            "recordings (the release layout has none)"
        )
    doc = json.loads(path.read_text(encoding="utf-8"))
    given = {t.get("trajectory_id"): t.get("intervening") or [] for t in doc["trajectories"]}
    if not any(given.values()):
        raise DatasetError(
            f"{path}: no trajectory lists `intervening` recordings, so Raw Lifelong would play "
            "exactly the benchmark's sessions; add the recordings between sessions "
            "(docs/apmbench.md, 'Trajectory organisations')"
        )
    out: list[Trajectory] = []
    moved: dict[str, list[int]] = {}
    for t in trajectories:
        where = f"{path}: trajectory {t.trajectory_id} intervening"
        extra = [
            read_session(root, s, f"{where}[{k}]", intervening=True)
            for k, s in enumerate(given.get(t.trajectory_id, []))
        ]
        sessions = sorted([*t.sessions, *extra], key=lambda s: s.start_ms)
        _check_between(t, sessions, where)
        moved[t.trajectory_id] = [sessions.index(s) for s in t.sessions]
        # On the wire every recording is named by its place alone: ids that told the
        # selected sessions from the added ones would tell a system which recordings no
        # question will ever ask about (it could keep nothing of them, for a lower
        # Storage/hr at no cost).
        named = [replace(s, session_id=f"L{k + 1:03d}") for k, s in enumerate(sessions)]
        out.append(replace(t, sessions=tuple(named)))
    return tuple(out), [_moved(c, moved[c.trajectory_id]) for c in candidates]


def _check_between(t: Trajectory, sessions: Sequence[Session], where: str) -> None:
    ids = [s.session_id for s in sessions]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{where}: a recording reuses a session_id")
    for before, after in itertools.pairwise(sessions):
        if after.start_ms < before.end_ms:
            raise DatasetError(
                f"{where}: {after.session_id} starts before {before.session_id} ends; "
                "recordings must lie between the selected sessions"
            )
    if sessions[0].intervening or sessions[-1].intervening:
        raise DatasetError(
            f"{where}: a recording lies before the first or after the last selected session "
            f"of {t.trajectory_id}: only the video between selected sessions is added"
        )


def _moved(c: Candidate, index: list[int]) -> Candidate:
    """`c` with every session index mapped to its place among the added recordings."""

    def turn(t: Turn) -> Turn:
        return replace(t, session_index=index[t.session_index])

    def probe(p: Probe) -> Probe:
        return replace(
            p, session_index=index[p.session_index], turns=tuple(turn(t) for t in p.turns)
        )

    return replace(
        c, probes=tuple(probe(p) for p in c.probes), turns=tuple(turn(t) for t in c.turns)
    )


def selected_before(trajectory: Trajectory, index: int, count: int) -> int:
    """The index of the selected session `count` selected sessions before `index` (or the
    first one): where an Evidence Availability replay starts."""
    selected = [k for k, s in enumerate(trajectory.sessions) if not s.intervening and k < index]
    return selected[-count] if len(selected) >= count else (selected[0] if selected else index)
