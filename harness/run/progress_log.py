"""Progress as log lines, for output that is not a terminal (CI logs, nohup, a pipe).

One structured line per finished trajectory (counts, elapsed time, an ETA
from the mean time of the trajectories run so far), one when judging starts
and ends, and a heartbeat whenever nothing was logged for `heartbeat_s`, so a
long trajectory never leaves the log silent for more than that.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from apmbench.harness import logs
from apmbench.harness.run.plan import Segment


@dataclass
class Progress:
    """Callbacks for a progress display; all optional."""

    trajectories: Callable[[int, int], None] = lambda total, skipped: None
    trajectory_started: Callable[[str, int], None] = lambda tid, segments: None
    segment_started: Callable[[Segment], None] = lambda s: None
    trajectory_done: Callable[[str], None] = lambda tid: None
    judged: Callable[[int, int], None] = lambda done, total: None


HEARTBEAT_S = 30.0
"""Well under a minute, so the log never goes quiet for a whole one even on a busy machine."""


def eta_s(done: int, total: int, elapsed_s: float) -> float | None:
    """Remaining seconds at the mean pace of the `done` trajectories; None before the first."""
    if done <= 0:
        return None
    return max(0.0, elapsed_s / done * (total - done))


class LogProgress:
    """Progress callbacks that log; use as a context manager (it runs the heartbeat)."""

    def __init__(
        self,
        label: str,
        heartbeat_s: float = HEARTBEAT_S,
        log: Callable[..., object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.heartbeat_s = heartbeat_s
        self._log = log or logs.get("progress").info
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.started = clock()
        self.last_line = self.started
        self.total = 0
        self.skipped = 0
        self.done = 0
        self.current: str | None = None
        self.segments = 0
        self.segments_done = 0
        self.judging: tuple[int, int] | None = None
        self.planned = False
        """Whether the plan (its trajectory count) is known yet."""

    # -- lines -------------------------------------------------------------------

    def _emit(self, event: str, **fields: object) -> None:
        with self._lock:
            self.last_line = self._clock()
        self._log(event, system=self.label, **fields)

    def _elapsed(self) -> float:
        return self._clock() - self.started

    def trajectories(self, total: int, skipped: int) -> None:
        self.total, self.skipped, self.planned = total, skipped, True
        # Same word as on a terminal, so a log shows at a glance that a run was resumed.
        event = "resuming" if skipped else "run started"
        self._emit(event, trajectories=total, already_done=skipped)

    def trajectory_started(self, tid: str, segments: int) -> None:
        with self._lock:
            self.current, self.segments, self.segments_done = tid, segments, 0

    def segment_started(self, segment: Segment) -> None:
        with self._lock:
            self.segments_done += 1

    def trajectory_done(self, tid: str) -> None:
        self.done += 1
        finished = self.skipped + self.done
        remaining = eta_s(self.done, self.total - self.skipped, self._elapsed())
        self._emit(
            "trajectory finished",
            trajectory=tid,
            done=f"{finished}/{self.total}",
            elapsed_s=round(self._elapsed(), 1),
            eta_s=None if remaining is None else round(remaining, 1),
        )
        with self._lock:
            self.current = None

    def judged(self, done: int, total: int) -> None:
        first = self.judging is None
        self.judging = (done, total)
        if first or done == total:
            self._emit("judging", done=f"{done}/{total}", elapsed_s=round(self._elapsed(), 1))

    def callbacks(self) -> Progress:
        return Progress(
            trajectories=self.trajectories,
            trajectory_started=self.trajectory_started,
            segment_started=self.segment_started,
            trajectory_done=self.trajectory_done,
            judged=self.judged,
        )

    # -- heartbeat ---------------------------------------------------------------

    def beat(self) -> bool:
        """Log a heartbeat if the log has been quiet for `heartbeat_s`; True if it did."""
        with self._lock:
            quiet = self._clock() - self.last_line
            current, seg, segs, judging = (
                self.current,
                self.segments_done,
                self.segments,
                self.judging,
            )
        if quiet < self.heartbeat_s:
            return False
        where: dict[str, object] = {}
        if not self.planned and judging is None:
            # Before the plan is known (the system loading, the dataset decoding): "done=0/0"
            # read as a run with nothing to do.
            self._emit("still running", phase="preparing", elapsed_s=round(self._elapsed(), 1))
            return True
        if judging is not None:
            where["judging"] = f"{judging[0]}/{judging[1]}"
        elif current is not None:
            where.update(trajectory=current, segment=f"{seg}/{segs}")
        self._emit(
            "still running",
            done=f"{self.skipped + self.done}/{self.total}",
            elapsed_s=round(self._elapsed(), 1),
            **where,
        )
        return True

    def _run(self) -> None:
        # Wake a few times per period, so a line is due at most a fraction late.
        while not self._stop.wait(self.heartbeat_s / 5):
            self.beat()

    def __enter__(self) -> LogProgress:
        self._thread = threading.Thread(target=self._run, name="progress-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
