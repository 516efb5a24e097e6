"""Every query of a run, as the viewer's drill-down shows it.

The records hold what the system answered (raw output, chunks, TTFT, the
parse, the judge's outcome); the prompt and the moment are rebuilt from the
suite's plan of the run's dataset, and the thumbnails are the last frames the
system had received before the query, decoded again from the dataset at the
run's frame rate and shrunk. Without the dataset (moved, or its hash
changed) the drill-down still shows the records, and says why the rest is
missing.
"""

from __future__ import annotations

import base64
import bisect
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apmbench.adapters.sdk.clock import format_ms
from apmbench.adapters.sdk.types import Frame, FrameEncoding
from apmbench.harness.media import frame_worker
from apmbench.harness.media.frame_worker import FrameWorkers
from apmbench.harness.media.frames import FrameSettings, frame_times, frames_at
from apmbench.harness.media.timeline import Session
from apmbench.harness.reports.system_text import html_text
from apmbench.harness.run.plan import Ask
from apmbench.harness.runtimes.base import usable_cores
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset

THUMBNAILS = 3
"""Frames shown per query: the last ones the system had received."""
THUMB_SIDE = 160
PARALLEL_SESSIONS = 24
"""Sessions with thumbnails from which they are drawn in worker processes (starting one
costs about as much as drawing a session's thumbnails)."""


@dataclass
class QueryRow:
    """One instance for the template; `frames` are keys into the shared image table."""

    run: str
    instance_id: str
    group: str
    trajectory_id: str
    segment: str
    when: str
    outcome: str
    prompt: str | None
    raw_output: str
    chunks: int | None
    ttft_s: float | None
    total_s: float | None
    parse: dict[str, object]
    judge: dict[str, object] | None
    gate: dict[str, object]
    frames: list[str] = field(default_factory=list)


# Fields the parse and gate panels show; a suite's rows carry the ones that apply.
_PARSE_FIELDS = ("format", "format_reason", "answer", "decision")
_GATE_FIELDS = (
    "correct",
    "correct_option_id",
    "expected_decision",
    "decision_correct",
    "gate_passed",
    "evidence_available",
)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plan_asks(suite: OpaqueSuite, dataset: SuiteDataset, can_import: bool) -> dict[str, Ask]:
    """instance id -> the ask that put it on the wire, for every trajectory."""
    out: dict[str, Ask] = {}
    for trajectory in dataset.trajectories:
        for segment in suite.plan(dataset, trajectory, can_import):
            for ask in segment.asks:
                out.setdefault(ask.instance_id, ask)
    return out


class Thumbnails:
    """Small JPEGs of the frames a system had received before each query, shared by all runs."""

    def __init__(self, dataset: SuiteDataset, fps: float) -> None:
        self.dataset = dataset
        self.fps = fps
        self.settings = FrameSettings(
            fps=fps, max_side=THUMB_SIDE, encoding=FrameEncoding.JPEG, jpeg_quality=70
        )
        self.wanted: dict[tuple[str, int], set[int]] = defaultdict(set)
        self.images: dict[str, str] = {}

    @staticmethod
    def key(trajectory_id: str, session_index: int, time_ms: int) -> str:
        return f"{trajectory_id}/{session_index}/{time_ms}"

    def request(self, trajectory_id: str, session_index: int, time_ms: int) -> list[str]:
        """Keys of the last THUMBNAILS frames at or before `time_ms`; decoded by `decode`."""
        trajectory = next(t for t in self.dataset.trajectories if t.trajectory_id == trajectory_id)
        times = frame_times(trajectory.sessions[session_index], self.fps)
        last = times[max(0, bisect.bisect_right(times, time_ms) - THUMBNAILS) :]
        last = [t for t in last if t <= time_ms]
        self.wanted[(trajectory_id, session_index)].update(last)
        return [self.key(trajectory_id, session_index, t) for t in last]

    def decode(self) -> None:
        """One pass per session, up to its last wanted frame; in frame worker processes,
        one per core, when there are enough sessions to pay for starting them (a
        paper-scale report draws about 11,000 thumbnails from 520 sessions, 20 s on one
        core; `APMBENCH_FRAME_WORKERS=0` keeps it in this process)."""
        by_id = {t.trajectory_id: t for t in self.dataset.trajectories}
        jobs = [
            (tid, index, by_id[tid].sessions[index], sorted(times))
            for (tid, index), times in sorted(self.wanted.items())
        ]
        cores = usable_cores()
        if len(jobs) < PARALLEL_SESSIONS or cores < 2 or not frame_worker.enabled():
            for tid, index, session, times in jobs:
                for frame in frames_at(session, self.settings, times):
                    self._keep(tid, index, frame)
            return
        with FrameWorkers() as workers, ThreadPoolExecutor(cores) as pool:

            def run(job: tuple[str, int, Session, list[int]]) -> list[Frame]:
                return list(workers.produce(job[2], self.settings, job[3]))

            for (tid, index, _, _), frames in zip(jobs, pool.map(run, jobs), strict=True):
                for frame in frames:
                    self._keep(tid, index, frame)

    def _keep(self, trajectory_id: str, index: int, frame: Frame) -> None:
        data = base64.b64encode(frame.data).decode("ascii")
        self.images[self.key(trajectory_id, index, frame.time_ms)] = data


def _when(row: Mapping[str, object], ask: Ask | None) -> str:
    time_ms = ask.time_ms if ask is not None else row.get("time_ms")
    clock = format_ms(int(time_ms)) if isinstance(time_ms, int) else "?"
    session = row.get("session_id") or (f"session {ask.session_index + 1}" if ask else "?")
    return f"{session} {clock}"


def query_rows(
    label: str,
    instances: Sequence[Mapping[str, Any]],
    suite: OpaqueSuite,
    asks: Mapping[str, Ask] | None,
    thumbnails: Thumbnails | None,
) -> list[QueryRow]:
    rows = []
    for r in instances:
        ask = asks.get(r["instance_id"]) if asks is not None else None
        frames: list[str] = []
        if ask is not None and thumbnails is not None:
            frames = thumbnails.request(r["trajectory_id"], ask.session_index, ask.time_ms)
        rows.append(
            QueryRow(
                run=label,
                instance_id=r["instance_id"],
                group=str(r.get("task", "")),
                trajectory_id=str(r.get("trajectory_id", "")),
                segment=str(r.get("segment", "")),
                when=_when(r, ask),
                outcome=suite.report_format().view_outcome(r),
                prompt=ask.query.prompt if ask is not None else None,
                # A system's answer: cut, control bytes gone (the records keep all of it).
                raw_output=html_text(r.get("raw_output", "")),
                chunks=r.get("chunks"),
                ttft_s=r.get("ttft_s"),
                total_s=r.get("total_s"),
                parse={k: r[k] for k in _PARSE_FIELDS if k in r},
                judge=r.get("judge"),
                gate={k: r[k] for k in _GATE_FIELDS if k in r},
                frames=frames,
            )
        )
    return rows
