"""The on-disk dataset formats (documented in README.md, "Dataset format").

The project layout:

    DIR/dataset.json        trajectories and their sessions
    DIR/candidates/*.json   candidates in the paper's annotation formats (D.3-D.8),
                            each file a JSON array; every candidate names its
                            task_type and trajectory_id (candidate_id, when
                            absent, is "<file name>/<position>")
    DIR/videos/...          one video per session, first frame = session start
                            (or, instead of "video", a "render" spec: frames the
                            synthetic generator renders on the fly)

The release layout (no dataset.json): the records exactly as the paper
prints them, ids inferred from directories, file names and positions; see
`release`.

Loading turns the files into typed, validated objects. Labels (correct
options, evidence, reference responses, silence reasons) stay in `Candidate`
and `Probe` fields that the schedule never puts on the wire.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apmbench.adapters.sdk.types import Choice, UserTurnKind
from apmbench.harness.errors import DatasetError
from apmbench.harness.media.timecode import MS_PER_DAY, format_ms, to_ms
from apmbench.harness.media.timeline import Session, Trajectory, Turn
from apmbench.harness.suites.apmbench import prompts, tasks
from apmbench.harness.suites.apmbench.release import RawCandidate, read_release

FORMAT = "apmbench-dataset"
FORMAT_VERSION = 1
# An Evidence Availability replay holds this many completed sessions before the
# query's own (the schedule's EA segments; paper section 3.2).
EA_REPLAYED_SESSIONS = 2


@dataclass(frozen=True)
class Probe:
    """One evaluation point: a question (MCQA/EA) or a decision probe (adaptive tasks).

    `turns` are the probe's own injected turns (interval markers); the
    candidate's shared turns are in `Candidate.turns`. Everything under
    `label` is for scoring only and never crosses the wire.
    """

    probe_id: str
    session_index: int
    time_ms: int
    prompt: str
    interval_start_ms: int | None = None
    turns: tuple[Turn, ...] = ()
    positive: bool | None = None
    label: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate:
    candidate_id: str
    trajectory_id: str
    task: str
    question: str
    choices: tuple[Choice, ...]
    correct_option_id: str | None
    probes: tuple[Probe, ...]
    turns: tuple[Turn, ...] = ()
    evidence_available: bool | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    original_candidate_id: str | None = None
    """EA only: the four-option candidate this question was derived from (Table 13)."""


# eq=False: identity hashing, so per-dataset lookups can be cached (the
# candidates hold their raw annotations, which are dicts and unhashable).
@dataclass(frozen=True, eq=False)
class Dataset:
    root: Path
    name: str
    trajectories: tuple[Trajectory, ...]
    candidates: tuple[Candidate, ...]
    content_hash: str
    organisation: str | None = None
    """The trajectory organisation it is played in (`organisation.VARIANTS`); None: the
    benchmark's own."""

    def trajectory(self, trajectory_id: str) -> Trajectory:
        for t in self.trajectories:
            if t.trajectory_id == trajectory_id:
                return t
        raise KeyError(trajectory_id)

    def candidates_of(self, trajectory_id: str) -> list[Candidate]:
        return [c for c in self.candidates if c.trajectory_id == trajectory_id]


def _req(obj: Mapping[str, object], key: str, where: str, kind: type = str) -> Any:
    if key not in obj:
        raise DatasetError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise DatasetError(f"{where}: field {key!r} must be {kind.__name__}, got {value!r}")
    return value


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise DatasetError(f"{path}: file not found") from e
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e


def read_session(
    root: Path, s: Mapping[str, object], where: str, intervening: bool = False
) -> Session:
    """One recording of dataset.json: its id, day, times and video (or render spec)."""
    day = _req(s, "day_id", where)
    start = to_ms(day, _req(s, "start_time", where))
    end = to_ms(day, _req(s, "end_time", where))
    if end < start:
        # An end time before the start: the session runs past midnight
        # (EgoLife recordings near 23:xx); day_id stays the start day.
        end += MS_PER_DAY
    if end == start:
        raise DatasetError(f"{where}: end_time must differ from start_time")
    sid = _req(s, "session_id", where)
    if "render" in s:
        render = _req(s, "render", where, dict)
        return Session(sid, day, start, end, None, render, intervening)
    return Session(sid, day, start, end, root / _req(s, "video", where), None, intervening)


def _load_trajectories(root: Path, doc: Mapping[str, object]) -> tuple[Trajectory, ...]:
    where = str(root / "dataset.json")
    if doc.get("format") != FORMAT:
        raise DatasetError(f"{where}: field 'format' must be {FORMAT!r}")
    if doc.get("format_version") != FORMAT_VERSION:
        raise DatasetError(
            f"{where}: format_version {doc.get('format_version')!r} is not supported "
            f"(this harness reads {FORMAT_VERSION})"
        )
    out: list[Trajectory] = []
    seen: set[str] = set()
    for i, t in enumerate(_req(doc, "trajectories", where, list)):
        tw = f"{where}: trajectories[{i}]"
        tid = _req(t, "trajectory_id", tw)
        if tid in seen:
            raise DatasetError(f"{tw}: duplicate trajectory_id {tid!r}")
        seen.add(tid)
        sessions: list[Session] = []
        for j, s in enumerate(_req(t, "sessions", tw, list)):
            sw = f"{tw}.sessions[{j}]"
            session = read_session(root, s, sw)
            if sessions and session.start_ms < sessions[-1].end_ms:
                raise DatasetError(f"{sw}: starts before the previous session ends")
            sessions.append(session)
        if not sessions:
            raise DatasetError(f"{tw}: has no sessions")
        if len({s.session_id for s in sessions}) != len(sessions):
            raise DatasetError(f"{tw}: duplicate session_id")
        out.append(Trajectory(tid, str(t.get("title", "")), tuple(sessions)))
    if not out:
        raise DatasetError(f"{where}: has no trajectories")
    return tuple(out)


def locate(
    trajectory: Trajectory, obj: Mapping[str, object], time_key: str, where: str
) -> tuple[int, int]:
    """The session index and trajectory-clock time (ms) of an annotation's moment, checked
    against its session."""
    session_id = _req(obj, "session_id", where)
    try:
        index = trajectory.session_index(session_id)
    except KeyError as e:
        raise DatasetError(
            f"{where}: session {session_id!r} is not in trajectory {trajectory.trajectory_id!r}"
        ) from e
    session = trajectory.sessions[index]
    day = _req(obj, "day_id", where)
    t = to_ms(day, _req(obj, time_key, where))
    start_day = session.start_ms // MS_PER_DAY
    end_day = session.end_ms // MS_PER_DAY
    if not start_day <= t // MS_PER_DAY <= end_day:
        raise DatasetError(f"{where}: day_id {day!r} but session is on {session.day_id!r}")
    if t < session.start_ms and t + MS_PER_DAY <= session.end_ms:
        # After midnight, written on the day the session started.
        t += MS_PER_DAY
    if not session.start_ms <= t <= session.end_ms:
        raise DatasetError(
            f"{where}: {time_key} {format_ms(t)} is outside session {session_id} "
            f"[{format_ms(session.start_ms)}, {format_ms(session.end_ms)}]"
        )
    return index, t


class _Builder:
    """Turns one raw candidate into a `Candidate`, checking every time against its session."""

    def __init__(self, record: RawCandidate, trajectory: Trajectory) -> None:
        self.raw = record.raw
        self.where = record.where
        self.trajectory = trajectory
        self.cid = record.candidate_id
        self.task = record.task

    def locate(self, obj: Mapping[str, object], time_key: str, what: str) -> tuple[int, int]:
        return locate(self.trajectory, obj, time_key, f"{self.where} {what}")

    def choices(self, count: int) -> tuple[tuple[Choice, ...], str]:
        raw = _req(self.raw, "choices", self.where, list)
        letters = "ABCDE"[:count]
        out = tuple(
            Choice(_req(c, "option_id", self.where), _req(c, "text", self.where)) for c in raw
        )
        if tuple(c.option_id for c in out) != tuple(letters):
            raise DatasetError(
                f"{self.where}: {self.task} needs choices {', '.join(letters)} in order"
            )
        correct = _req(self.raw, "correct_option_id", self.where)
        if correct not in letters:
            raise DatasetError(f"{self.where}: correct_option_id {correct!r} is not an option")
        return out, correct

    def candidate(self, **kw: Any) -> Candidate:
        kw.setdefault("question", "")
        kw.setdefault("choices", ())
        kw.setdefault("correct_option_id", None)
        return Candidate(
            candidate_id=self.cid,
            trajectory_id=self.trajectory.trajectory_id,
            task=self.task,
            raw=self.raw,
            **kw,
        )

    # -- per task ------------------------------------------------------------

    def mcqa(self) -> Candidate:
        choices, correct = self.choices(4)
        question = _req(self.raw, "question", self.where)
        index, t = self.locate(_req(self.raw, "query", self.where, dict), "query_time", "query")
        prompt = prompts.mcqa(question, choices, spatial=self.task == "STU")
        probe = Probe(f"{self.cid}", index, t, prompt)
        return self.candidate(
            question=question, choices=choices, correct_option_id=correct, probes=(probe,)
        )

    def evidence_availability(self) -> Candidate:
        choices, correct = self.choices(5)
        question = _req(self.raw, "question", self.where)
        available = _req(self.raw, "evidence_available", self.where, bool)
        if available == (correct == "E"):
            raise DatasetError(
                f"{self.where}: evidence_available={available} contradicts "
                f"correct_option_id {correct!r} (E means the evidence is unavailable)"
            )
        index, t = self.locate(_req(self.raw, "query", self.where, dict), "query_time", "query")
        self.check_evidence_availability(available, index, t)
        prompt = prompts.evidence_availability(question, choices)
        original = self.raw.get("original_candidate_id")
        if original is not None and not isinstance(original, str):
            raise DatasetError(f"{self.where}: original_candidate_id must be a string")
        return self.candidate(
            question=question,
            choices=choices,
            correct_option_id=correct,
            probes=(Probe(self.cid, index, t, prompt),),
            evidence_available=available,
            original_candidate_id=original,
        )

    def check_evidence_availability(self, available: bool, index: int, query_ms: int) -> None:
        """The label must agree with where the evidence lies: available exactly when every
        evidence moment is inside what the replay shows (the two most recent completed
        sessions and the query session up to the query)."""
        moments = _req(self.raw, "evidence_moments", self.where, list)
        if not moments:
            raise DatasetError(f"{self.where}: EA needs evidence_moments to check its label")
        first = max(0, index - EA_REPLAYED_SESSIONS)
        sessions = self.trajectory.sessions
        outside: list[str] = []
        for k, moment in enumerate(moments):
            what = f"evidence_moments[{k}]"
            start_index, _ = self.locate(moment, "start_time", what)
            end_index, end = self.locate(moment, "end_time", what)
            if end_index > index or end > query_ms:
                raise DatasetError(
                    f"{self.where} {what}: ends after the query at {format_ms(query_ms)}; "
                    "evidence must precede the question"
                )
            if start_index < first:
                outside.append(sessions[start_index].session_id)
        replayed = f"{sessions[first].session_id}..{sessions[index].session_id}"
        if available and outside:
            raise DatasetError(
                f"{self.where}: evidence_available=true but its evidence in "
                f"{', '.join(outside)} lies outside the replayed sessions {replayed}; "
                "set it to false (and correct_option_id to 'E') or fix evidence_moments"
            )
        if not available and not outside:
            raise DatasetError(
                f"{self.where}: evidence_available=false but all its evidence lies inside the "
                f"replayed sessions {replayed}; set it to true with the content answer "
                "or fix evidence_moments"
            )

    def _heartbeat_probes(self, prompt: str) -> list[Probe]:
        probes: list[Probe] = []
        pos = _req(self.raw, "positive_heartbeat", self.where, dict)
        index, t = self.locate(pos, "query_time", "positive_heartbeat")
        probes.append(Probe(f"{self.cid}#pos", index, t, prompt, positive=True, label=pos))
        for k, neg in enumerate(_req(self.raw, "negative_heartbeats", self.where, list)):
            index, t = self.locate(neg, "query_time", f"negative_heartbeats[{k}]")
            probes.append(Probe(f"{self.cid}#neg{k}", index, t, prompt, positive=False, label=neg))
        return sorted(probes, key=lambda p: (p.time_ms, p.probe_id))

    def era(self) -> Candidate:
        choices, correct = self.choices(4)
        question = _req(self.raw, "question", self.where)
        probes = self._heartbeat_probes(prompts.era_probe())
        sessions = {p.session_index for p in probes}
        if len(sessions) != 1:
            raise DatasetError(f"{self.where}: ERA heartbeats must all be in one session")
        index = probes[0].session_index
        start = self.trajectory.sessions[index].start_ms
        turn = Turn(index, start, UserTurnKind.QUESTION, prompts.era_question(question, choices))
        return self.candidate(
            question=question,
            choices=choices,
            correct_option_id=correct,
            probes=tuple(probes),
            turns=(turn,),
        )

    def _registration(self) -> Turn:
        reg = _req(self.raw, "registration_event", self.where, dict)
        index, t = self.locate(reg, "registration_time", "registration_event")
        text = _req(reg, "registration_text", f"{self.where} registration_event")
        return Turn(index, t, UserTurnKind.REGISTRATION, text)

    def rcr(self) -> Candidate:
        turn = self._registration()
        probes = self._heartbeat_probes(prompts.rcr_probe())
        if any(p.time_ms < turn.time_ms for p in probes):
            raise DatasetError(f"{self.where}: a probe precedes the registration")
        return self.candidate(probes=tuple(probes), turns=(turn,))

    def _window_probe(
        self, window: Mapping[str, object], what: str, probe_id: str, positive: bool
    ) -> Probe:
        index, start = self.locate(window, "start_time", what)
        index_end, end = self.locate(window, "end_time", what)
        if index_end != index or end <= start:
            raise DatasetError(f"{self.where} {what}: end_time must follow start_time")
        marker = Turn(
            index, start, UserTurnKind.INTERVAL_MARKER, prompts.interval_marker(format_ms(start))
        )
        prompt = prompts.interval_probe(self.task, format_ms(start), format_ms(end))
        return Probe(probe_id, index, end, prompt, start, (marker,), positive, window)

    def windows(self) -> Candidate:
        probes: list[Probe] = []
        if self.task == "TPG":
            positives = _req(self.raw, "ideal_response_windows", self.where, list)
        else:
            positives = [_req(self.raw, "ideal_response_window", self.where, dict)]
        for k, w in enumerate(positives):
            probes.append(self._window_probe(w, f"ideal window {k}", f"{self.cid}#pos{k}", True))
        negatives = _req(self.raw, "negative_or_silence_windows", self.where, list)
        for k, w in enumerate(negatives):
            probes.append(self._window_probe(w, f"silence window {k}", f"{self.cid}#neg{k}", False))
        turns: tuple[Turn, ...] = ()
        if self.task == "PRM":
            reg = self._registration()
            if any(p.turns[0].time_ms < reg.time_ms for p in probes):
                raise DatasetError(f"{self.where}: a probe interval precedes the registration")
            turns = (reg,)
        probes.sort(key=lambda p: (p.time_ms, p.probe_id))
        return self.candidate(probes=tuple(probes), turns=turns)

    def build(self) -> Candidate:
        if self.task in tasks.MCQA_TASKS:
            return self.mcqa()
        if self.task == tasks.EVIDENCE_AVAILABILITY:
            return self.evidence_availability()
        if self.task == "ERA":
            return self.era()
        if self.task == "RCR":
            return self.rcr()
        if self.task in ("MPA", "PRM", "TPG"):
            return self.windows()
        raise DatasetError(
            f"{self.where}: unknown task_type {self.task!r} (one of {', '.join(tasks.ALL_TASKS)})"
        )


def hash_files(root: Path, annotations: Sequence[Path], videos: Sequence[Path]) -> str:
    """Content hash of a dataset: annotations in full; videos by size and their
    first and last MiB, so that hashing 100 GB of video does not take minutes."""
    digest = hashlib.sha256()
    for path in sorted(annotations):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    for path in sorted(set(videos)):
        size = path.stat().st_size
        digest.update(str(path.relative_to(root)).encode() + b"\0" + str(size).encode())
        with path.open("rb") as f:
            digest.update(f.read(1 << 20))
            f.seek(max(0, size - (1 << 20)))
            digest.update(f.read(1 << 20))
    return digest.hexdigest()


def check_video_lengths(trajectories: Sequence[Trajectory]) -> None:
    """Fail before any work when a video is unreadable or shorter than its session."""
    from apmbench.harness.media.frames import END_TOLERANCE_MS, probe_duration_ms

    problems = []
    for t in trajectories:
        for s in t.sessions:
            if s.video is None:
                continue
            length = probe_duration_ms(s.video)
            if length + END_TOLERANCE_MS < s.end_ms - s.start_ms:
                problems.append(
                    f"{s.video.name} lasts {length / 1000:.1f} s but session "
                    f"{t.trajectory_id}/{s.session_id} lasts {s.duration_s:.1f} s"
                )
    if problems:
        raise DatasetError("videos shorter than their sessions: " + "; ".join(problems))


def _project_records(root: Path) -> tuple[tuple[Trajectory, ...], list[RawCandidate], list[Path]]:
    doc = _read_json(root / "dataset.json")
    trajectories = _load_trajectories(root, doc)
    public = isinstance(doc, dict) and doc.get("labels") == "withheld"
    files = sorted((root / "candidates").glob("*.json"))
    if not files:
        raise DatasetError(f"{root / 'candidates'}: no candidate files (*.json)")
    records: list[RawCandidate] = []
    for path in files:
        items = _read_json(path)
        if not isinstance(items, list):
            raise DatasetError(f"{path}: must hold a JSON array of candidates")
        for k, raw in enumerate(items):
            where = f"{path.name}[{k}]"
            if not isinstance(raw, dict):
                raise DatasetError(f"{where}: a candidate must be a JSON object")
            tid = _req(raw, "trajectory_id", where)
            if public:  # `apmbench-grpc split`'s public part: stand-in labels
                from apmbench.harness.suites.apmbench.split import fill_withheld

                raw = fill_withheld(raw)
            cid = raw.get("candidate_id", f"{path.stem}/{k}")
            if not isinstance(cid, str):
                raise DatasetError(f"{where}: field 'candidate_id' must be str, got {cid!r}")
            records.append(RawCandidate(raw, where, tid, cid, _req(raw, "task_type", where)))
    return trajectories, records, [root / "dataset.json", *files]


def _check_links(candidates: Sequence[Candidate]) -> None:
    """An EA candidate's original question must be a four-option candidate of its trajectory."""
    by_id = {c.candidate_id: c for c in candidates}
    for c in candidates:
        if c.original_candidate_id is None:
            continue
        original = by_id.get(c.original_candidate_id)
        if original is None or original.task not in tasks.MCQA_TASKS:
            raise DatasetError(
                f"{c.candidate_id}: original_candidate_id {c.original_candidate_id!r} is not "
                "a four-option (MCQA) candidate of this dataset"
            )
        if original.trajectory_id != c.trajectory_id:
            raise DatasetError(
                f"{c.candidate_id}: its original question {original.candidate_id!r} is in "
                f"another trajectory ({original.trajectory_id!r})"
            )


def load_dataset(root: Path, need_files: bool = True) -> Dataset:
    """Read and validate a dataset directory; raise `DatasetError` naming what to fix.

    With a dataset.json: the project layout; without: the release layout
    (`release`), the annotation records as the paper prints them. `need_files=False`: the
    labels alone, on a machine without the videos (`score --labels`).
    """
    root = Path(root)
    if not root.is_dir():
        raise DatasetError(f"dataset directory {root} does not exist")
    project = (root / "dataset.json").is_file()
    if project:
        trajectories, records, files = _project_records(root)
    else:
        trajectories, records, files = read_release(root)
    by_id = {t.trajectory_id: t for t in trajectories}
    candidates: list[Candidate] = []
    ids: set[str] = set()
    for record in records:
        if record.trajectory_id not in by_id:
            raise DatasetError(
                f"{record.where}: trajectory {record.trajectory_id!r} is not in dataset.json"
            )
        candidate = _Builder(record, by_id[record.trajectory_id]).build()
        if candidate.candidate_id in ids:
            raise DatasetError(f"{record.where}: duplicate candidate_id {candidate.candidate_id!r}")
        ids.add(candidate.candidate_id)
        candidates.append(candidate)
    _check_links(candidates)
    missing = sorted(
        {
            str(s.video)
            for t in trajectories
            for s in t.sessions
            if s.video is not None and not s.video.is_file()
        }
    )
    if missing and need_files:
        raise DatasetError("session videos not found: " + ", ".join(missing))
    if project and need_files:
        # Release sessions end where their videos end, so only these can be short.
        check_video_lengths(trajectories)
    videos = [s.video for t in trajectories for s in t.sessions if s.video is not None]
    videos = videos if need_files else []
    content_hash = hash_files(root, files, videos)
    name = str(_read_json(root / "dataset.json").get("name", root.name)) if project else root.name
    return Dataset(root, name, trajectories, tuple(candidates), content_hash)
