"""Live play (`evaluate --live`): a session's frames, turns and questions offered on the
video's clock, whatever the system has finished.

A `LiveFeed` is the camera. A thread of its own walks the session's items in time order
and offers each at its capture time, scaled by the speed, into a queue the runner drains
in order. The system takes what waits whenever it is free: everything the camera offered
while it was busy arrives as one push, and a question waits behind the pushes offered
before it, so a backlog shows in the question's lag and in its latency, both measured
from the time the question was due. Frames waiting beyond the buffer (a second of video
by default) are dropped, the oldest first, as a live camera's ring buffer overwrites
them; user turns and questions are never dropped. A periodic question (a proactive
step, asked every second) still waiting when the next one falls due is dropped in its
favour: the next decides on newer frames.

The feed records how late it offered each item against the clock: the harness's own
pacing error, reported beside the numbers so a run can show the harness was not the
bottleneck.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from apmbench.adapters.sdk.types import Frame, StreamItem
from apmbench.harness.errors import ConfigError
from apmbench.harness.run.plan import Ask, Cut

DEFAULT_BUFFER_S = 1.0


@dataclass(frozen=True)
class LiveSettings:
    """`evaluate --live`: play each session on a clock instead of as fast as the system
    takes it."""

    speed: float = 1.0
    """Seconds of video per second of wall time (`--speed`)."""
    buffer_s: float = DEFAULT_BUFFER_S
    """Frames waiting for the system beyond this much video are dropped, the oldest first
    (`--live-buffer`)."""

    def __post_init__(self) -> None:
        if not self.speed > 0:
            raise ConfigError(
                f"--speed must be above 0 (seconds of video per second), got {self.speed:g}"
            )
        if self.buffer_s < 0:
            raise ConfigError(f"--live-buffer must be 0 or more seconds, got {self.buffer_s:g}")

    def max_waiting_frames(self, fps: float) -> int:
        """The frames the buffer holds at `fps`: at least one (the newest)."""
        return max(1, round(self.buffer_s * fps))


class PacingStats(TypedDict):
    """How late the harness offered a session's items against the clock (ms)."""

    items: int
    p50_ms: float
    p99_ms: float
    max_ms: float


class LiveSession(TypedDict):
    """What one session played live recorded: the trajectory record keeps one per session
    a segment played (`live`)."""

    segment: str
    session_index: int
    speed: float
    buffer_s: float
    frames_offered: int
    frames_dropped: int
    questions_dropped: int
    wall_s: float
    """From the first item's due time until the session ended (EndSession returned; for a
    segment that stops inside a session, its last call)."""
    achieved_fps: float
    """Frames the system took per second of that wall time."""
    pacing: PacingStats
    end_session_s: NotRequired[float]
    """How long EndSession took (absent: the segment stopped inside the session)."""
    ended_late_s: NotRequired[float]
    """How long after the session's last moment (its end time on the clock) EndSession
    returned: work a system deferred past the session, by taking frames at once and
    perceiving them later, shows here."""
    settled_late_s: NotRequired[float]
    """For a main-pass session: how long after its last moment its memory was exported
    (EndSession and ExportState both done): deferred work hidden in the export shows here."""


Item = StreamItem | Ask | Cut
"""What the runner merges into a session's stream: frames, user turns, asks, cuts."""


class LiveFeed:
    """The camera of one session: offers `items` at their times from a thread and hands
    the runner what waits, in order."""

    def __init__(
        self, items: Iterator[Item], settings: LiveSettings, max_waiting_frames: int
    ) -> None:
        self._items = items
        self._origin_ms: int | None = None
        """The first item's time: the clock starts with it (a segment that starts late in a
        session, or keeps only some frames, waits for nothing before its first item)."""
        self._speed = settings.speed
        self._buffer_s = settings.buffer_s
        self._max_frames = max_waiting_frames
        self._queue: deque[Item] = deque()
        self._waiting_frames = 0
        self._done = False
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._ready = threading.Condition()
        self.offered_frames = 0
        self.dropped_frames = 0
        self.dropped_asks: list[Ask] = []
        self.errors_ms: list[float] = []
        self.start_s = 0.0
        self._ended: tuple[float, float] | None = None
        self._thread = threading.Thread(target=self._offer, name="live-feed", daemon=True)

    def __enter__(self) -> LiveFeed:
        self.start_s = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        with self._ready:
            self._ready.notify_all()
        self._thread.join()

    def due_s(self, time_ms: int) -> float:
        """The wall time (monotonic) at which the item captured at `time_ms` is offered."""
        origin = time_ms if self._origin_ms is None else self._origin_ms
        return self.start_s + (time_ms - origin) / 1000.0 / self._speed

    def _offer(self) -> None:
        try:
            for item in self._items:
                if self._origin_ms is None:
                    # The clock starts when the first item is in hand: what the session's
                    # frame source took to produce it is not the harness's pacing error.
                    self.start_s = time.monotonic()
                    self._origin_ms = _time_ms(item)
                due = self.due_s(_time_ms(item))
                while (wait := due - time.monotonic()) > 0:
                    if self._stop.wait(min(wait, 0.05)):
                        return
                late_ms = max(0.0, (time.monotonic() - due) * 1000.0)
                self.errors_ms.append(late_ms)
                with self._ready:
                    self._put(item)
                    self._ready.notify()
        except BaseException as e:
            self._error = e
        finally:
            with self._ready:
                self._done = True
                self._ready.notify()

    def _put(self, item: Item) -> None:
        if isinstance(item, Frame):
            self.offered_frames += 1
            self._queue.append(item)
            self._waiting_frames += 1
            while self._waiting_frames > self._max_frames:
                self._drop_oldest_frame()
            return
        if isinstance(item, Ask) and item.period_ms is not None:
            # The newest periodic question replaces one still waiting.
            for queued in list(self._queue):
                if isinstance(queued, Ask) and queued.period_ms is not None:
                    self._queue.remove(queued)
                    self.dropped_asks.append(queued)
        self._queue.append(item)

    def _drop_oldest_frame(self) -> None:
        for queued in self._queue:
            if isinstance(queued, Frame):
                self._queue.remove(queued)
                self._waiting_frames -= 1
                self.dropped_frames += 1
                return

    def take(self) -> list[Item] | None:
        """What waits, up to and including the first question or cut (what comes after it
        stays queued, still under the buffer's rule); blocks until something waits. None:
        the session has been offered in full and taken."""
        with self._ready:
            while not self._queue and not self._done:
                self._ready.wait()
            if self._error is not None:
                raise self._error
            if not self._queue:
                return None
            taken: list[Item] = []
            while self._queue:
                item = self._queue.popleft()
                taken.append(item)
                if isinstance(item, Frame):
                    self._waiting_frames -= 1
                if isinstance(item, Ask | Cut):
                    break
            return taken

    def session_ended(self, end_ms: int, took_s: float) -> None:
        """EndSession returned now, having taken `took_s`; the session ended at `end_ms`."""
        self._ended = (took_s, max(0.0, time.monotonic() - self.due_s(end_ms)))

    def record(self, segment: str, index: int, end_s: float, frames_taken: int) -> LiveSession:
        wall = max(end_s - self.start_s, 1e-9)
        played: LiveSession = {
            "segment": segment,
            "session_index": index,
            "speed": self._speed,
            "buffer_s": self._buffer_s,
            "frames_offered": self.offered_frames,
            "frames_dropped": self.dropped_frames,
            "questions_dropped": len(self.dropped_asks),
            "wall_s": round(wall, 4),
            "achieved_fps": round(frames_taken / wall, 3),
            "pacing": pacing_stats(self.errors_ms),
        }
        if self._ended is not None:
            played["end_session_s"] = round(self._ended[0], 6)
            played["ended_late_s"] = round(self._ended[1], 6)
        return played


def pacing_stats(errors_ms: list[float]) -> PacingStats:
    """p50, p99 and the worst of the harness's lateness against the clock."""
    ordered = sorted(errors_ms) or [0.0]
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {
        "items": len(errors_ms),
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(p99, 3),
        "max_ms": round(ordered[-1], 3),
    }


def _time_ms(item: Item) -> int:
    return item.time_ms


class Spread(TypedDict):
    mean: float | None
    p50: float | None
    p99: float | None
    max: float | None


class LiveReport(TypedDict):
    """report.json's `live`: what a live run's records say of keeping up with the clock."""

    speed: float
    buffer_s: float
    sessions: int
    frames_offered: int
    frames_dropped: int
    frames_dropped_share: float | None
    achieved_fps_mean: float | None
    questions_asked: int
    questions_dropped: int
    """Periodic questions dropped for a newer one before they were asked."""
    late: int
    """Periodic answers that took effect after the next step was due."""
    lag_s: Spread
    """How far behind the clock each question was sent (its backlog)."""
    latency_s: Spread
    """From the time each question was due to its answer's end."""
    ended_late_s: Spread
    """Per session that ended: how long after its last moment EndSession returned (work
    deferred past the session)."""
    settled_late_s: Spread
    """Per main-pass session: how long after its last moment its memory was exported."""
    pacing_ms: PacingStats
    """The harness's lateness offering items: the median of the sessions' p50s, the worst
    session's p99 and the worst item."""


def _spread(values: list[float]) -> Spread:
    if not values:
        return {"mean": None, "p50": None, "p99": None, "max": None}
    ordered = sorted(values)
    return {
        "mean": round(statistics.fmean(ordered), 6),
        "p50": round(statistics.median(ordered), 6),
        "p99": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 6),
        "max": round(ordered[-1], 6),
    }


def summarize(
    sessions: Sequence[LiveSession], instances: Sequence[Mapping[str, object]]
) -> LiveReport | None:
    """The live figures of a run's records; None for an offline run (no session played live)."""
    if not sessions:
        return None
    offered = sum(s["frames_offered"] for s in sessions)
    dropped = sum(s["frames_dropped"] for s in sessions)
    asked = [r for r in instances if "lag_s" in r]
    lags = [float(r["lag_s"]) for r in asked if isinstance(r["lag_s"], int | float)]
    totals = [float(t) for r in asked if isinstance(t := r.get("total_s"), int | float)]
    ended = [s["ended_late_s"] for s in sessions if "ended_late_s" in s]
    settled = [s["settled_late_s"] for s in sessions if "settled_late_s" in s]
    return {
        "speed": sessions[0]["speed"],
        "buffer_s": sessions[0].get("buffer_s", DEFAULT_BUFFER_S),
        "sessions": len(sessions),
        "frames_offered": offered,
        "frames_dropped": dropped,
        "frames_dropped_share": round(dropped / offered, 6) if offered else None,
        "achieved_fps_mean": round(statistics.fmean(s["achieved_fps"] for s in sessions), 3),
        "questions_asked": len(asked),
        "questions_dropped": sum(1 for r in instances if r.get("live_dropped") is True),
        "late": sum(1 for r in asked if r.get("late") is True),
        "lag_s": _spread(lags),
        "latency_s": _spread(totals),
        "ended_late_s": _spread(ended),
        "settled_late_s": _spread(settled),
        "pacing_ms": {
            "items": sum(s["pacing"]["items"] for s in sessions),
            "p50_ms": round(statistics.median(s["pacing"]["p50_ms"] for s in sessions), 3),
            "p99_ms": max(s["pacing"]["p99_ms"] for s in sessions),
            "max_ms": max(s["pacing"]["max_ms"] for s in sessions),
        },
    }


def markdown(live: LiveReport) -> str:
    """report.md's section on a live run, written by the harness for every suite."""
    lag, lat, pace = live["lag_s"], live["latency_s"], live["pacing_ms"]
    end, settled = live["ended_late_s"], live["settled_late_s"]
    share = live["frames_dropped_share"]

    def s(v: float | None) -> str:
        return "n/c" if v is None else f"{v:.3f}"

    return "\n".join(
        [
            f"## Live play at {live['speed']:g}x, buffer {live['buffer_s']:g} s",
            "",
            "Each session was played on the video's clock: frames, turns and questions were "
            "offered at their times whatever the system had finished, and frames waiting "
            f"beyond {live['buffer_s']:g} s of video were dropped (docs/live.md). Every latency "
            "in this report runs from the time the question was due. Numbers here compare "
            "only with live runs at the same speed and buffer.",
            "",
            "| measure | value |",
            "|---|---|",
            f"| sessions played live | {live['sessions']} |",
            f"| frames offered / dropped | {live['frames_offered']} / {live['frames_dropped']}"
            + ("" if share is None else f" ({100 * share:.1f}%)")
            + " |",
            f"| frames taken per second (mean over sessions) | {s(live['achieved_fps_mean'])} |",
            f"| questions asked / dropped for a newer step / late | {live['questions_asked']} / "
            f"{live['questions_dropped']} / {live['late']} |",
            f"| lag when asked, s (mean / p50 / max) | {s(lag['mean'])} / {s(lag['p50'])} / "
            f"{s(lag['max'])} |",
            f"| latency from the question's time, s (mean / p50 / p99) | {s(lat['mean'])} / "
            f"{s(lat['p50'])} / {s(lat['p99'])} |",
            f"| session ended, s after its last moment (mean / max) | "
            f"{s(end['mean'])} / {s(end['max'])} |",
            f"| session settled (memory exported), s after its last moment (mean / max): "
            f"work deferred past the session | {s(settled['mean'])} / {s(settled['max'])} |",
            f"| harness pacing error, ms (p50 / p99 / max) | {pace['p50_ms']:.3f} / "
            f"{pace['p99_ms']:.3f} / {pace['max_ms']:.3f} |",
            "",
        ]
    )
