"""Drives one system through the segments of a trajectory.

The harness owns the clock: frames and user turns are pushed in time order,
each question is asked at its time after exactly the frames up to that time,
and no label ever leaves the harness (queries carry only rendered prompts and
the question's own text and options). Between sessions the persistence mode
decides what may cross the gap:

- restart: a new process, then ImportState of the exported state (honest default);
- reset:   Reset + ImportState in the same process;
- trust:   the process keeps its memory; exports are only measured.
"""

from __future__ import annotations

import contextlib
import enum
import time
import uuid
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from apmbench.adapters.sdk.types import (
    DialogueTurn,
    Frame,
    FrameEncoding,
    Query,
    SessionEnd,
    SessionStart,
    StateManifest,
    StreamItem,
    SystemInfo,
    UserTurn,
)
from apmbench.harness.errors import ConfigError
from apmbench.harness.json_types import JsonObject
from apmbench.harness.media.frame_cache import Produce, SessionFrames
from apmbench.harness.media.frames import FrameProducer, FrameSettings
from apmbench.harness.media.timeline import Session, Trajectory, Turn
from apmbench.harness.protocol import wire_rules
from apmbench.harness.protocol.client import ByteLimit, QueryResult, SystemClient
from apmbench.harness.run.connection import Connection
from apmbench.harness.run.live import LiveFeed, LiveSession, LiveSettings
from apmbench.harness.run.plan import Ask, AskState, Cut, Segment
from apmbench.harness.run.push_cuts import PushCuts
from apmbench.harness.run.records import SessionRecord, TrajectoryRecord
from apmbench.harness.runtimes.base import Runtime


class Persistence(enum.Enum):
    RESTART = "restart"
    RESET = "reset"
    TRUST = "trust"


DEFAULT_MAX_STATE_BYTES = 4 << 30
DEFAULT_MAX_WORK_BYTES = 16 << 30


@dataclass(frozen=True)
class RunSettings:
    persistence: Persistence = Persistence.RESTART
    frames: FrameSettings = field(default_factory=FrameSettings)
    push: PushCuts = field(default_factory=PushCuts)
    """Where push calls end besides questions (at random, so sizes announce nothing)."""
    max_chunk_bytes: int = 0
    """State transfer chunk size; 0 = the protocol default (1 MiB)."""
    audit: JsonObject | None = None
    """The audit settings of `evaluate --audit` (None: no audit), recorded with the run."""
    max_state_bytes: int | None = DEFAULT_MAX_STATE_BYTES
    """Exported state per snapshot at most (`--max-state-size`); None: no cap."""
    max_work_bytes: int | None = DEFAULT_MAX_WORK_BYTES
    """Snapshots of a trajectory on disk at once at most (`--max-work-size`); None: no cap."""
    live: LiveSettings | None = None
    """`evaluate --live`: play each session on the video's clock (harness/run/live.py);
    None: an offline replay, each call sent when the one before returned."""
    resume_forks: bool = False
    """In `restart` mode, with a system declaring `resumes_sessions` (R14): start a fork in
    a fresh process from the main pass's snapshot taken just before the fork's first turn or
    question, instead of replaying its first session from the start (`--fork-snapshots`).
    Off by default: a mid-session ExportState tells the main pass that a fork's turn or
    question comes at that time, and its state can carry that to the fork, whose ImportState
    (untimed) may then do the question's work: the leak that random push cuts close."""

    def as_dict(self) -> JsonObject:
        fields = asdict(self)
        del fields["live"]
        return {
            **fields,
            "persistence": self.persistence.value,
            "frames": {**asdict(self.frames), "encoding": self.frames.encoding.value},
            # Absent from an offline run's settings, as before live play existed.
            **({} if self.live is None else {"live": asdict(self.live)}),
        }


def check_settings(settings: RunSettings, info: SystemInfo, runtime: Runtime) -> None:
    """Refuse combinations that cannot work, before any work is done."""
    if settings.live is not None and settings.resume_forks:
        raise ConfigError(
            "--live plays every session from its start on the clock: drop --fork-snapshots"
        )
    if settings.live is not None and settings.audit is not None:
        raise ConfigError(
            "--live and --audit: the audits re-ask questions off the clock; audit an offline run"
        )
    if settings.persistence is not Persistence.TRUST and not info.capabilities.supports_import:
        raise ConfigError(
            f"system {info.name!r} cannot import state, so persistence "
            f"{settings.persistence.value!r} is impossible: use --persistence trust"
        )
    if settings.persistence is Persistence.RESTART and not runtime.can_restart:
        raise ConfigError(
            f"the {runtime.kind} runtime cannot restart the system: "
            "use --persistence reset (or trust)"
        )


def frame_settings_for(settings: FrameSettings, info: SystemInfo) -> FrameSettings:
    """Adapt frame size and encoding to what the system declared."""
    caps = info.capabilities
    encoding = (
        settings.encoding if settings.encoding in caps.frame_encodings else caps.frame_encodings[0]
    )
    max_side = caps.preferred_max_side or settings.max_side
    too_big = wire_rules.frame_fit_problem(max_side, encoding is FrameEncoding.RGB24)
    if too_big is not None:
        whose = "the system's preferred_max_side" if caps.preferred_max_side else "--max-side"
        raise ConfigError(
            f"frames of {info.name!r} would not fit one gRPC message: {too_big}; lower "
            f"{whose} to {wire_rules.MAX_RGB24_SIDE} or less, or send JPEG (--encoding jpeg)"
        )
    return FrameSettings(settings.fps, max_side, encoding, settings.jpeg_quality)


@dataclass
class _Snapshot:
    path: Path
    manifest: StateManifest


def forks_resume(settings: RunSettings, info: SystemInfo) -> bool:
    """Whether forks start from a mid-session snapshot (R14) rather than a session replay:
    only where every fork gets a fresh process (`restart`), so a process that imports a
    snapshot of session k at time t holds nothing later than t, although the main pass has
    by then finished session k."""
    caps = info.capabilities
    return (
        settings.resume_forks
        and settings.persistence is Persistence.RESTART
        and caps.supports_import
        and caps.resumes_sessions
    )


def resume_point(segment: Segment, decoys: bool = True) -> int | None:
    """The time in its first session at which a fork may start from the main pass's state:
    just before its first turn (a decoy too, when they are sent) or question there, when
    everything before that is exactly the main pass's (same snapshot to start from, every
    frame pushed); None: it may not. The main pass's questions before it change nothing
    (R5), nor do its decoys: every turn the main pass sent before that point is one the
    fork would send too, or the fork's first turn would be earlier."""
    if segment.kind != "fork" or segment.keep_frame is not None:
        return None
    first = segment.first_session
    if segment.snapshot_after != (first - 1 if first > 0 else None):
        return None
    turns = segment.turns_in(first) + (segment.decoys_in(first) if decoys else [])
    times = [t.time_ms for t in turns] + [a.time_ms for a in segment.asks_in(first)]
    return min(times, default=None)


def _merge(
    frames: Iterator[Frame], turns: Sequence[Turn], asks: Sequence[Ask], cuts: Sequence[Cut] = ()
) -> Iterator[StreamItem | Ask | Cut]:
    """Frames, turns, asks and cuts in time order; at equal times frame < turn < ask, cut."""
    events: list[tuple[int, int, UserTurn | Ask | Cut]] = [
        (t.time_ms, 0, UserTurn(t.time_ms, t.kind, t.text)) for t in turns
    ]
    events += [(a.time_ms, 1, a) for a in asks]
    events += [(c.time_ms, 1, c) for c in cuts]
    events.sort(key=lambda e: (e[0], e[1]))
    pending = next(frames, None)
    for at, _, event in events:
        while pending is not None and pending.time_ms <= at:
            yield pending
            pending = next(frames, None)
        yield event
    while pending is not None:
        yield pending
        pending = next(frames, None)


class Auditor(Protocol):
    """Watches a trajectory's queries and main-pass sessions (`evaluate --audit`;
    apmbench.harness.run.audits.queries)."""

    def ask(
        self, runner: TrajectoryRunner, segment: Segment, ask: Ask, query: Query
    ) -> QueryResult: ...

    def session_done(self, runner: TrajectoryRunner, segment: Segment, index: int) -> None: ...


class TrajectoryRunner:
    """Runs every segment of one trajectory and returns its record."""

    def __init__(
        self,
        system: Connection,
        trajectory: Trajectory,
        settings: RunSettings,
        work_dir: Path,
        on_segment: Callable[[Segment], None] = lambda s: None,
        auditor: Auditor | None = None,
        produce: Produce | None = None,
    ) -> None:
        self.produce = produce
        """What produces a session's frames for the frame cache (None: the harness's own
        threads; `evaluate` hands in its frame workers')."""
        self.system = system
        """The runtime and its current start, shared with the pipeline and the audits."""
        self.info = system.info
        self.trajectory = trajectory
        self.settings = settings
        self.cutter = settings.push.cutter()
        self.frames = frame_settings_for(settings.frames, system.info)
        self.work_dir = work_dir
        self.on_segment = on_segment
        self.auditor = auditor
        self.snapshots: dict[int, _Snapshot] = {}
        # Segments still to start from each main-pass snapshot, and the snapshots the main
        # pass itself no longer needs: a snapshot is deleted once both say it is free.
        self._pending: Counter[int] = Counter()
        self._main_past: set[int] = set()
        self.work_peak_bytes = 0
        self._labels: dict[bool, tuple[str, int]] = {}
        """R16: the content_type and format_version of the trajectory's first export, one
        for exports between sessions and one for exports in the middle of a session (the
        SDK wraps an open session's state in a label of its own)."""
        """The most bytes of snapshots this trajectory held on disk at once."""
        self.instances: list[dict[str, Any]] = []
        """Each asked instance's record: the runner's fields (`InstanceRow`) and the ask's;
        nothing graded (scoring grades every answer, once)."""
        self.sessions: list[SessionRecord] = []
        # The latest time_ms pushed into the current process since it started: what it may
        # still hold. Only a restart clears it; a Reset is the system's own word.
        self.held_ms: int | None = None
        self.frame_cache: SessionFrames | None = None
        # One per segment name: a main pass split by `causal_order` keeps its state.
        self.ask_states: dict[str, AskState] = {}
        # Forks that start mid-session (R14): where, the main pass's snapshots there, and
        # how many forks still need each.
        self.resume = forks_resume(settings, system.info)
        self.resume_at: dict[str, tuple[int, int]] = {}
        self.mid_snapshots: dict[tuple[int, int], _Snapshot] = {}
        self._mid_pending: Counter[tuple[int, int]] = Counter()
        self.forks_resumed = 0
        self.frames_skipped = 0
        """Frames forks did not replay because they started from a mid-session snapshot."""
        self.live_sessions: list[LiveSession] = []
        """Per session played live: what was offered, dropped, taken, and the pacing."""
        self.feed: LiveFeed | None = None
        """The live session being played (None: offline, or between sessions)."""

    @property
    def client(self) -> SystemClient:
        """The current start's client (a restart replaces it)."""
        return self.system.client

    # -- memory across gaps ------------------------------------------------------

    def _held_bytes(self) -> int:
        held = [*self.snapshots.values(), *self.mid_snapshots.values()]
        return sum(s.manifest.total_bytes for s in held)

    def _limit(self) -> ByteLimit | None:
        """The tighter of the two caps for the next export: per snapshot, and what the
        snapshots already kept leave of the work directory's cap."""
        limits = []
        if self.settings.max_state_bytes is not None:
            limits.append(ByteLimit(self.settings.max_state_bytes, "--max-state-size"))
        if self.settings.max_work_bytes is not None:
            held = self._held_bytes()
            limits.append(
                ByteLimit(
                    max(self.settings.max_work_bytes - held, 0),
                    "--max-work-size",
                    f"what the cap on the run's snapshots on disk leaves ({held} bytes are "
                    f"kept for pending forks of {self.trajectory.trajectory_id})",
                )
            )
        return min(limits, key=lambda x: x.bytes) if limits else None

    def _export(self, name: str) -> tuple[_Snapshot, float]:
        path = self.work_dir / f"{name}.state"
        result = self.client.export_to_file(path, self.settings.max_chunk_bytes, self._limit())
        label = (result.manifest.content_type, result.manifest.format_version)
        first = self._labels.setdefault(name.startswith("mid_"), label)
        if (problem := wire_rules.label_change_problem(first, label)) is not None:
            path.unlink(missing_ok=True)
            raise wire_rules.violation("ExportState", "R16", problem)
        snapshot = _Snapshot(path, result.manifest)
        self.work_peak_bytes = max(
            self.work_peak_bytes, self._held_bytes() + result.manifest.total_bytes
        )
        return snapshot, result.seconds

    def _release(self, index: int) -> None:
        """Delete snapshot `index` once neither the main pass nor a pending fork needs it."""
        if index in self._main_past and self._pending[index] <= 0:
            found = self.snapshots.pop(index, None)
            if found is not None:
                found.path.unlink(missing_ok=True)

    def _load(self, snapshot: _Snapshot | None) -> float:
        """Give the system exactly `snapshot` (or an empty memory) as the persistence mode says."""
        started = time.perf_counter()
        if self.settings.persistence is Persistence.RESTART:
            self.system.restart()
            self.held_ms = None
        self.client.reset(self.trajectory.trajectory_id)
        if snapshot is not None:
            self.client.import_file(snapshot.manifest, snapshot.path, self.settings.max_chunk_bytes)
        return time.perf_counter() - started

    def _cross_gap(self, snapshot: _Snapshot | None) -> float:
        if self.settings.persistence is Persistence.TRUST:
            return 0.0
        return self._load(snapshot)

    # -- segments ----------------------------------------------------------------

    def run(self, segments: list[Segment]) -> TrajectoryRecord:
        can_import = self.info.capabilities.supports_import
        if self.resume:
            for s in segments:
                at = resume_point(s, self.settings.push.decoys)
                if at is not None:
                    self.resume_at[s.name] = (s.first_session, at)
            self._mid_pending = Counter(self.resume_at.values())
        resumed = {name: first for name, (first, _) in self.resume_at.items()}
        ordered = causal_order(segments, can_import, resumed)
        # Every segment that starts from a snapshot (forks, replays, and the main pass's own
        # later pieces) holds it until it has run.
        self._pending = Counter(s.snapshot_after for s in ordered if s.snapshot_after is not None)
        main_started = False
        # Forks and replays push the sessions the main pass pushes: produce each once.
        with SessionFrames(self.frames, self.work_dir / "frames", produce=self.produce) as cache:
            self.frame_cache = cache
            cache.prefetch(list(enumerate(self.trajectory.sessions)))
            for segment in ordered:
                if segment.kind != "main" or not main_started:  # one tick for the main pass
                    self.on_segment(segment)
                main_started = main_started or segment.kind == "main"
                self._run_segment(segment)
                if segment.snapshot_after is not None:
                    self._pending[segment.snapshot_after] -= 1
                    self._release(segment.snapshot_after)
                (self.work_dir / "fork.state").unlink(missing_ok=True)
            self.frame_cache = None
        for index in list(self.snapshots):
            self._main_past.add(index)
            self._release(index)
        lookahead = [r["lookahead_s"] for r in self.instances]
        record: TrajectoryRecord = {
            "trajectory_id": self.trajectory.trajectory_id,
            "instances": sorted(self.instances, key=lambda r: (r["time_ms"], r["instance_id"])),
            "sessions": self.sessions,
            "max_lookahead_s": max(lookahead, default=0.0),
            "forks": {
                "from_mid_session_snapshot": self.forks_resumed,
                "frames_not_replayed": self.frames_skipped,
            },
        }
        if self.settings.live is not None:
            record["live"] = self.live_sessions
        return record

    def _run_segment(self, segment: Segment) -> None:
        """Replay the segment's sessions; in `restart` mode every start is a fresh process.

        A fork that started from a reused process could carry hidden memory of
        later sessions from the main pass, so forks restart too.
        """
        main = segment.kind == "main"
        self._frames_ready(segment.first_session)
        point = self.resume_at.get(segment.name)
        if point is not None and point in self.mid_snapshots:
            # A fresh process (restart mode) given the main pass's state at the point.
            load_s = self._load(self.mid_snapshots[point])
            self._mid_pending[point] -= 1
            if self._mid_pending[point] <= 0:
                self.mid_snapshots.pop(point).path.unlink(missing_ok=True)
            self.forks_resumed += 1
        else:
            point = None
            start = (
                None if segment.snapshot_after is None else self.snapshots[segment.snapshot_after]
            )
            load_s = self._load(start)
        carried: _Snapshot | None = None
        for index in range(segment.first_session, segment.last_session + 1):
            if index > segment.first_session:
                self._frames_ready(index)
                load_s = self._cross_gap(carried)
            final = index == segment.last_session
            stop_at = segment.stop_in(index, self.settings.push.decoys)
            after_ms = point[1] if point is not None and index == point[0] else None
            self._play_session(segment, index, stop_at, load_s, after_ms)
            if main:
                # The session before is loaded and audited: the main pass is past it.
                self._main_past.add(index - 1)
                self._release(index - 1)
            if stop_at is not None:
                return
            if final:
                continue
            if main:
                carried = self.snapshots[index]
            elif self.settings.persistence is not Persistence.TRUST:
                carried, _ = self._export("fork")

    def _frames_ready(self, index: int) -> None:
        """Have the session's frames produced before its replay starts (before the system's
        restart or Reset), so no push waits on production (see SessionFrames.ready)."""
        if self.frame_cache is not None and (self.settings.push.decoys or self.settings.live):
            # Live: decoded ahead of the clock, so no frame is offered late for want of it.
            self.frame_cache.ready(index, self.trajectory.sessions[index])

    def _play_session(
        self,
        segment: Segment,
        index: int,
        stop_at: int | None,
        load_s: float,
        resumed_at: int | None = None,
    ) -> None:
        """Play one session; `resumed_at`: the imported state holds it open up to that time
        (R14), so only what comes after is pushed."""
        session = self.trajectory.sessions[index]
        tid = self.trajectory.trajectory_id
        if resumed_at is None:
            self.client.start_session(
                SessionStart(tid, session.session_id, session.day_id, session.start_ms)
            )
        # Where forks will start from this session's state (main pass only): exported when
        # every frame up to the point is pushed and before anything at or after it is asked.
        points = (
            sorted({at for (i, at) in self._mid_pending if i == index})
            if segment.kind == "main"
            else []
        )
        ingest_s = 0.0
        frames = turns = 0
        batch: list[StreamItem] = []

        def flush() -> None:
            nonlocal ingest_s, frames, turns
            if batch:
                latest = max(item.time_ms for item in batch)
                self.held_ms = latest if self.held_ms is None else max(self.held_ms, latest)
                pushed = self.client.push(
                    batch, batched=self.info.capabilities.accepts_item_batches
                )
                ingest_s += pushed.seconds
                frames += pushed.frames
                turns += pushed.user_turns
                batch.clear()

        if self.frame_cache is not None:
            source = self.frame_cache.frames(index, session, stop_at)
        else:
            source = decode_in_background(session, self.frames, stop_at)
        if segment.keep_frame is not None:
            source = _kept(source, segment.keep_frame)
        if resumed_at is not None:
            source = self._after(source, resumed_at)
        given = segment.turns_in(index)
        cuts: list[Cut] = []
        if self.settings.push.decoys:
            given += segment.decoys_in(index)
            cuts = segment.cuts_in(index)
        if stop_at is not None:
            # Nothing later than where the segment stops is pushed.
            given = [t for t in given if t.time_ms <= stop_at]
            cuts = [c for c in cuts if c.time_ms <= stop_at]
        if self.settings.live is not None:
            with contextlib.closing(source):
                items = _merge(source, given, segment.asks_in(index), cuts)
                frames_before = frames
                live = self.settings.live
                with LiveFeed(items, live, live.max_waiting_frames(self.frames.fps)) as feed:
                    self.feed = feed
                    while (taken := feed.take()) is not None:
                        for item in taken:
                            if isinstance(item, Ask):
                                flush()
                                self._dialogue(segment, item, ingest_s, session.start_ms)
                            elif isinstance(item, Cut):
                                flush()
                            else:
                                batch.append(item)
                        flush()
                    self.feed = None
                    for dropped in feed.dropped_asks:
                        self._record_dropped(segment, dropped, session.start_ms)
                    taken_frames = frames - frames_before
                    if stop_at is None:
                        # The session's end is on the clock too: what a system deferred
                        # (frames taken at once, perceived later) shows as the time
                        # EndSession takes past the session's last moment.
                        end_s = self.client.end_session(
                            SessionEnd(session.session_id, session.end_ms)
                        )
                        feed.session_ended(session.end_ms, end_s)
                        end_due_s = feed.due_s(session.end_ms)
                    played = feed.record(segment.name, index, time.monotonic(), taken_frames)
                self.live_sessions.append(played)
        else:
            with contextlib.closing(source):
                items = _merge(source, given, segment.asks_in(index), cuts)
                for item in items:
                    while points and _past(item, points[0]):
                        flush()
                        self._export_mid(index, points.pop(0))
                    if isinstance(item, Ask):
                        flush()
                        self._dialogue(segment, item, ingest_s, session.start_ms)
                        continue
                    if isinstance(item, Cut):
                        flush()
                        continue
                    batch.append(item)
                    if self.cutter.ends_after(len(batch)):
                        flush()
                flush()
                for at in points:
                    self._export_mid(index, at)
        if stop_at is not None:
            return
        if self.settings.live is None:
            end_s = self.client.end_session(SessionEnd(session.session_id, session.end_ms))
        if segment.kind != "main":
            return
        snapshot, export_s = self._export(f"after_{index}")
        if self.settings.live is not None:
            # Work a system defers past the session can also hide in its export (red team
            # 14): the session is settled once its memory is handed over.
            self.live_sessions[-1]["settled_late_s"] = round(time.monotonic() - end_due_s, 6)
        self.snapshots[index] = snapshot
        if self.auditor is not None:
            self.auditor.session_done(self, segment, index)
        self.sessions.append(
            SessionRecord(
                trajectory_id=tid,
                session_id=session.session_id,
                day_id=session.day_id,
                index=index,
                duration_s=session.duration_s,
                frames=frames,
                user_turns=turns,
                ingest_s=ingest_s,
                end_session_s=end_s,
                load_state_s=load_s,
                export_s=export_s,
                state_bytes=snapshot.manifest.total_bytes,
                state_sha256=snapshot.manifest.sha256,
            )
        )

    def _export_mid(self, index: int, at: int) -> None:
        self.mid_snapshots[(index, at)], _ = self._export(f"mid_{index}_{at}")

    def _after(self, frames: Generator[Frame], after_ms: int) -> Generator[Frame]:
        """The frames later than `after_ms`: those before are in the imported state."""
        with contextlib.closing(frames):
            for frame in frames:
                if frame.time_ms > after_ms:
                    yield frame
                else:
                    self.frames_skipped += 1

    def _dialogue(self, segment: Segment, ask: Ask, ingest_s: float, session_start_ms: int) -> None:
        """Ask `ask`, then each follow-up its answer calls for, back to back: no frame is
        pushed between rounds, and each round carries the earlier ones with the system's
        actual answers."""
        dialogue: tuple[DialogueTurn, ...] = ()
        current: Ask | None = ask
        render: Callable[[Query], Query] | None = None
        state = None
        if segment.state is not None:
            state = self.ask_states.get(segment.name)
            if state is None:
                state = self.ask_states[segment.name] = segment.state()
        while current is not None:
            query = replace(current.query, query_id=uuid.uuid4().hex, dialogue=dialogue)
            if state is not None:
                query = state.render(current, query)
            if render is not None:
                query = render(query)
            sent_s = time.monotonic()
            if self.auditor is not None:
                result = self.auditor.ask(self, segment, current, query)
            else:
                result = self.client.query(query)
            record = self._record(segment, current, result, ingest_s, session_start_ms)
            if self.feed is not None:
                record.update(self._live_fields(segment, ask, sent_s, result))
            if state is not None:
                state.update(current, record)
            follow = current.follow_up
            if follow is None:
                return
            asked = bool(follow.when(result.text))
            record["follow_up_id"] = follow.ask.instance_id
            record["follow_up_asked"] = asked
            if not asked:
                return
            dialogue = (*dialogue, DialogueTurn(query.prompt, query.question, result.text))
            current, render = follow.ask, follow.render

    def _record(
        self,
        segment: Segment,
        ask: Ask,
        result: QueryResult,
        ingest_s: float,
        session_start_ms: int,
    ) -> dict[str, object]:
        prefix_s = (ask.time_ms - session_start_ms) / 1000.0
        held = self.held_ms if self.held_ms is not None else ask.time_ms
        rtf = None
        if result.ttft_s is not None and prefix_s > 0:
            rtf = (ingest_s + result.ttft_s) / prefix_s
        record: dict[str, object] = {
            "instance_id": ask.instance_id,
            **ask.fields,
            "pass": segment.kind,
            "segment": segment.name,
            "session_id": self.trajectory.sessions[ask.session_index].session_id,
            "time_ms": ask.time_ms,
            "raw_output": result.text,
            "chunks": result.chunks,
            "ttft_s": result.ttft_s,
            "total_s": result.total_s,
            "prefix_s": prefix_s,
            "ingest_s": ingest_s,
            "rtf": rtf,
            # How far past the query the process had been shown (0 in restart mode).
            "lookahead_s": max(0, held - ask.time_ms) / 1000.0,
            # The stream's pieces, as lengths of raw_output, and when each arrived: what
            # time to answer needs, computed where the answer is graded.
            "piece_chars": [len(piece) for piece in result.pieces],
            "arrivals_s": list(result.arrivals_s),
        }
        self.instances.append(record)
        return record

    def _live_fields(
        self, segment: Segment, ask: Ask, sent_s: float, result: QueryResult
    ) -> dict[str, object]:
        """A live question's timings from when it was due (the dialogue's first round's
        time), as every latency column reads them: a backlog the question waited behind
        is the system's latency too. `lag_s`: how far behind the clock it was sent;
        `effective_ms`: the video time its answer took effect."""
        assert self.feed is not None and self.settings.live is not None
        lag = max(0.0, sent_s - self.feed.due_s(ask.time_ms))
        total = lag + result.total_s
        effective_ms = ask.time_ms + round(total * self.settings.live.speed * 1000.0)
        fields: dict[str, object] = {
            "lag_s": round(lag, 6),
            "ttft_s": None if result.ttft_s is None else lag + result.ttft_s,
            "total_s": total,
            "arrivals_s": [lag + a for a in result.arrivals_s],
            "effective_ms": effective_ms,
        }
        if ask.period_ms is not None:
            # Late: the answer took effect after the next step was due.
            fields["period_ms"] = ask.period_ms
            fields["late"] = effective_ms > ask.time_ms + ask.period_ms
        return fields

    def _record_dropped(self, segment: Segment, ask: Ask, session_start_ms: int) -> None:
        """A periodic question the live feed dropped for a newer one: never asked."""
        self.instances.append(
            {
                "instance_id": ask.instance_id,
                **ask.fields,
                "pass": segment.kind,
                "segment": segment.name,
                "session_id": self.trajectory.sessions[ask.session_index].session_id,
                "time_ms": ask.time_ms,
                "raw_output": "",
                "chunks": 0,
                "ttft_s": None,
                "total_s": None,
                "prefix_s": (ask.time_ms - session_start_ms) / 1000.0,
                "ingest_s": 0.0,
                "rtf": None,
                "lookahead_s": 0.0,
                "piece_chars": [],
                "arrivals_s": [],
                "live_dropped": True,
            }
        )


def _past(item: StreamItem | Ask | Cut, point_ms: int) -> bool:
    """Whether `item` comes after a mid-session snapshot point: a frame later than it, or
    anything else at it or later (a fork resumed there pushes its turns from it on)."""
    return item.time_ms > point_ms if isinstance(item, Frame) else item.time_ms >= point_ms


def _kept(frames: Generator[Frame], keep: Callable[[int], bool]) -> Generator[Frame]:
    with contextlib.closing(frames):
        for frame in frames:
            if keep(frame.time_ms):
                yield frame


def decode_in_background(
    session: Session, settings: FrameSettings, until_ms: int | None
) -> Generator[Frame]:
    """A session's frames from a background producer, for a replay outside `run`."""
    with FrameProducer(session, settings, until_ms=until_ms) as producer:
        yield from producer


def causal_order(
    segments: list[Segment], can_import: bool, resumed: Mapping[str, int] | None = None
) -> list[Segment]:
    """The segments in an order where no process holds data of a later session than the
    one it answers, even when only the system's own Reset separates them.

    A fork or replay whose last session is L runs right after the main pass has
    finished session L-1 (its snapshot is then available), before the main pass
    pushes session L; the main pass then resumes from its own snapshot. Without
    ImportState the main pass cannot resume, so the plan's order is kept (and the
    look-ahead this leaves is measured and recorded).

    `resumed` names the forks that start from the main pass's state in the middle of
    their first session F (R14, `restart` mode only): they run once the main pass has
    finished F, in a fresh process given a snapshot from before their first turn.
    """
    resumed = resumed or {}
    # "after" segments start from an empty memory once everything else has run.
    after = [s for s in segments if s.kind == "after"]
    segments = [s for s in segments if s.kind != "after"]
    mains = [s for s in segments if s.kind == "main"]
    others = [s for s in segments if s.kind != "main"]
    if not can_import or len(mains) != 1 or not others:
        return segments + after
    main = mains[0]
    due: dict[int, list[Segment]] = {}
    # Within a group, earlier questions first: less of the session is held when they are asked.
    for s in sorted(others, key=lambda s: (s.asks[-1].time_ms if s.asks else 0, s.name)):
        key = max(main.first_session - 1, s.last_session - 1, resumed.get(s.name, -1))
        due.setdefault(key, []).append(s)
    ordered: list[Segment] = [*due.pop(main.first_session - 1, [])]
    start = main.first_session
    for k in range(main.first_session, main.last_session + 1):
        waiting = due.pop(k, []) if k < main.last_session else []
        if k < main.last_session and not waiting:
            continue
        ordered.append(_main_piece(main, start, k))
        ordered.extend(waiting)
        start = k + 1
    ordered.extend(s for later in due.values() for s in later)
    return ordered + after


def _main_piece(main: Segment, first: int, last: int) -> Segment:
    """Sessions first..last of the main pass, resuming from its own snapshot after first-1."""
    return replace(
        main,
        first_session=first,
        last_session=last,
        snapshot_after=main.snapshot_after if first == main.first_session else first - 1,
        asks=tuple(a for a in main.asks if first <= a.session_index <= last),
    )
