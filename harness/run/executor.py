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

import enum
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from apmbench.adapters.sdk.types import (
    Frame,
    Query,
    SessionEnd,
    SessionStart,
    StateManifest,
    StreamItem,
    SystemInfo,
    UserTurn,
)
from apmbench.harness.errors import ConfigError
from apmbench.harness.media.frames import FrameProducer, FrameSettings
from apmbench.harness.media.timeline import Trajectory, Turn
from apmbench.harness.protocol.client import ByteLimit, QueryResult, SystemClient
from apmbench.harness.run.plan import Ask, Segment
from apmbench.harness.runtimes.process import Runtime


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
    push_batch: int = 64
    """Frames per PushFrames call at most; calls also end at every question."""
    max_chunk_bytes: int = 0
    """State transfer chunk size; 0 = the protocol default (1 MiB)."""
    audit: dict[str, Any] | None = None
    """The audit settings of `evaluate --audit` (None: no audit), recorded with the run."""
    max_state_bytes: int | None = DEFAULT_MAX_STATE_BYTES
    """Exported state per snapshot at most (`--max-state-size`); None: no cap."""
    max_work_bytes: int | None = DEFAULT_MAX_WORK_BYTES
    """Snapshots of a trajectory on disk at once at most (`--max-work-size`); None: no cap."""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["persistence"] = self.persistence.value
        d["frames"]["encoding"] = self.frames.encoding.value
        return d


def check_settings(settings: RunSettings, info: SystemInfo, runtime: Runtime) -> None:
    """Refuse combinations that cannot work, before any work is done."""
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
    return FrameSettings(settings.fps, max_side, encoding, settings.jpeg_quality)


@dataclass
class _Snapshot:
    path: Path
    manifest: StateManifest


def _merge(
    frames: Iterator[Frame], turns: list[Turn], asks: list[Ask]
) -> Iterator[StreamItem | Ask]:
    """Frames, turns and asks in time order; at equal times frame < turn < ask."""
    events: list[tuple[int, int, UserTurn | Ask]] = [
        (t.time_ms, 0, UserTurn(t.time_ms, t.kind, t.text)) for t in turns
    ]
    events += [(a.time_ms, 1, a) for a in asks]
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


Grader = Callable[[Ask, str], Mapping[str, Any]]
"""The suite's deterministic grading of one raw answer: fields added to its record."""


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
        runtime: Runtime,
        client: SystemClient,
        info: SystemInfo,
        trajectory: Trajectory,
        settings: RunSettings,
        work_dir: Path,
        grade: Grader,
        on_segment: Callable[[Segment], None] = lambda s: None,
        auditor: Auditor | None = None,
    ) -> None:
        self.grade = grade
        self.runtime = runtime
        self.client = client
        self.info = info
        self.trajectory = trajectory
        self.settings = settings
        self.frames = frame_settings_for(settings.frames, info)
        self.work_dir = work_dir
        self.on_segment = on_segment
        self.auditor = auditor
        self.snapshots: dict[int, _Snapshot] = {}
        # Forks still to run from each main-pass snapshot, and the snapshots the main pass
        # itself no longer needs: a snapshot is deleted once both say it is free.
        self._forks_from: Counter[int] = Counter()
        self._main_past: set[int] = set()
        self.work_peak_bytes = 0
        """The most bytes of snapshots this trajectory held on disk at once."""
        self.instances: list[dict[str, Any]] = []
        self.sessions: list[dict[str, Any]] = []

    # -- memory across gaps ------------------------------------------------------

    def _held_bytes(self) -> int:
        return sum(s.manifest.total_bytes for s in self.snapshots.values())

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
        snapshot = _Snapshot(path, result.manifest)
        self.work_peak_bytes = max(
            self.work_peak_bytes, self._held_bytes() + result.manifest.total_bytes
        )
        return snapshot, result.seconds

    def _release(self, index: int) -> None:
        """Delete snapshot `index` once neither the main pass nor a pending fork needs it."""
        if index in self._main_past and self._forks_from[index] <= 0:
            found = self.snapshots.pop(index, None)
            if found is not None:
                found.path.unlink(missing_ok=True)

    def _load(self, snapshot: _Snapshot | None) -> float:
        """Give the system exactly `snapshot` (or an empty memory) as the persistence mode says."""
        started = time.perf_counter()
        if self.settings.persistence is Persistence.RESTART:
            self.client = self.runtime.restart()
        self.client.reset(self.trajectory.trajectory_id)
        if snapshot is not None:
            self.client.import_file(snapshot.manifest, snapshot.path, self.settings.max_chunk_bytes)
        return time.perf_counter() - started

    def _cross_gap(self, snapshot: _Snapshot | None) -> float:
        if self.settings.persistence is Persistence.TRUST:
            return 0.0
        return self._load(snapshot)

    # -- segments ----------------------------------------------------------------

    def run(self, segments: list[Segment]) -> dict[str, Any]:
        self._forks_from = Counter(
            s.snapshot_after for s in segments if s.kind != "main" and s.snapshot_after is not None
        )
        for segment in segments:
            self.on_segment(segment)
            self._run_segment(segment)
            if segment.kind == "main":
                for index in range(segment.first_session, segment.last_session + 1):
                    self._main_past.add(index)
                    self._release(index)
            elif segment.snapshot_after is not None:
                self._forks_from[segment.snapshot_after] -= 1
                self._release(segment.snapshot_after)
            (self.work_dir / "fork.state").unlink(missing_ok=True)
        return {
            "trajectory_id": self.trajectory.trajectory_id,
            "instances": sorted(self.instances, key=lambda r: (r["time_ms"], r["instance_id"])),
            "sessions": self.sessions,
        }

    def _run_segment(self, segment: Segment) -> None:
        """Replay the segment's sessions; in `restart` mode every start is a fresh process.

        A fork that started from a reused process could carry hidden memory of
        later sessions from the main pass, so forks restart too.
        """
        main = segment.kind == "main"
        start = None if segment.snapshot_after is None else self.snapshots[segment.snapshot_after]
        load_s = self._load(start)
        last_ask_ms = segment.asks[-1].time_ms if segment.asks else None
        carried: _Snapshot | None = None
        for index in range(segment.first_session, segment.last_session + 1):
            if index > segment.first_session:
                load_s = self._cross_gap(carried)
            final = index == segment.last_session
            stop_at = last_ask_ms if (final and segment.stop_after_last_ask) else None
            self._play_session(segment, index, stop_at, load_s)
            if stop_at is not None:
                return
            if final:
                continue
            if main:
                carried = self.snapshots[index]
                # The session before is loaded and audited: the main pass is past it.
                self._main_past.add(index - 1)
                self._release(index - 1)
            elif self.settings.persistence is not Persistence.TRUST:
                carried, _ = self._export("fork")

    def _play_session(
        self, segment: Segment, index: int, stop_at: int | None, load_s: float
    ) -> None:
        session = self.trajectory.sessions[index]
        tid = self.trajectory.trajectory_id
        self.client.start_session(
            SessionStart(tid, session.session_id, session.day_id, session.start_ms)
        )
        ingest_s = 0.0
        frames = turns = 0
        batch: list[StreamItem] = []

        def flush() -> None:
            nonlocal ingest_s, frames, turns
            if batch:
                pushed = self.client.push(batch)
                ingest_s += pushed.seconds
                frames += pushed.frames
                turns += pushed.user_turns
                batch.clear()

        with FrameProducer(session, self.frames, until_ms=stop_at) as producer:
            items = _merge(iter(producer), segment.turns_in(index), segment.asks_in(index))
            for item in items:
                if isinstance(item, Ask):
                    flush()
                    query = replace(item.query, query_id=uuid.uuid4().hex)
                    if self.auditor is not None:
                        result = self.auditor.ask(self, segment, item, query)
                    else:
                        result = self.client.query(query)
                    self._record(segment, item, result, ingest_s, session.start_ms)
                    continue
                batch.append(item)
                if len(batch) >= self.settings.push_batch:
                    flush()
            flush()
        if stop_at is not None:
            return
        end_s = self.client.end_session(SessionEnd(session.session_id, session.end_ms))
        if segment.kind != "main":
            return
        snapshot, export_s = self._export(f"after_{index}")
        self.snapshots[index] = snapshot
        if self.auditor is not None:
            self.auditor.session_done(self, segment, index)
        self.sessions.append(
            {
                "trajectory_id": tid,
                "session_id": session.session_id,
                "day_id": session.day_id,
                "index": index,
                "duration_s": session.duration_s,
                "frames": frames,
                "user_turns": turns,
                "ingest_s": ingest_s,
                "end_session_s": end_s,
                "load_state_s": load_s,
                "export_s": export_s,
                "state_bytes": snapshot.manifest.total_bytes,
                "state_sha256": snapshot.manifest.sha256,
            }
        )

    def _record(
        self,
        segment: Segment,
        ask: Ask,
        result: QueryResult,
        ingest_s: float,
        session_start_ms: int,
    ) -> None:
        prefix_s = (ask.time_ms - session_start_ms) / 1000.0
        rtf = None
        if result.ttft_s is not None and prefix_s > 0:
            rtf = (ingest_s + result.ttft_s) / prefix_s
        record: dict[str, Any] = {
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
        }
        record.update(self.grade(ask, result.text))
        self.instances.append(record)


def describe_info(info: SystemInfo) -> dict[str, Any]:
    caps = info.capabilities
    return {
        "name": info.name,
        "version": info.version,
        "protocol_version": info.protocol_version,
        "capabilities": {
            "frame_encodings": [e.value for e in caps.frame_encodings],
            "preferred_max_side": caps.preferred_max_side,
            "supports_import": caps.supports_import,
            "streaming_ingest": caps.streaming_ingest,
        },
        "details": dict(info.details),
    }
