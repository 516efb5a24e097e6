"""What a run will cost, said before it starts: starts, frames pushed, queries, and the time
per start measured on the first one; and the settings that would cut it.

Counted from the suite's plan, as the runner plays it: every segment starts from a
fresh system in `restart` mode, and so does every later session of a segment (the
gap between two sessions is a restart too); a segment that stops early pushes the
frames up to its stop only (its last question, or later: `Segment.stop_in`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from apmbench.harness.media.frames import frame_times
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.executor import Persistence
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset


@dataclass(frozen=True)
class Projection:
    trajectories: int
    starts: int
    """System starts that serve, in the run's persistence mode (the first one included;
    spares started and never used are not counted)."""
    frames: int
    """Frames pushed, forks and replays included."""
    queries: int
    start_s: float
    """The first start's time, from launch to SERVING."""
    spare: bool
    """Whether restarts get spares (their starts overlap the sessions)."""
    later_start_s: float | None = None
    """What each start after the first costs where that differs (a restore of a snapshot
    the first start made); None: as the first."""

    @property
    def start_total_s(self) -> float:
        if self.later_start_s is None:
            return self.starts * self.start_s
        return self.start_s + (self.starts - 1) * self.later_start_s

    def advice(self, persistence: Persistence) -> list[str]:
        """Settings that would cut the cost, each with what it saves."""
        out = []
        restored = self.later_start_s is not None  # no spare can help a restore
        if persistence is Persistence.RESTART and self.starts > self.trajectories and not restored:
            if not self.spare:
                out.append(
                    f"drop --no-spare (or --sandbox-net / a container network): spares start "
                    f"the next systems while one serves, hiding most of the "
                    f"{self.start_total_s:.0f} s of starts"
                )
            elif self.start_s > 2.0:
                out.append(
                    "a start of several seconds needs several spares in flight: give "
                    "--spare-memory room for them if the log says the restarts waited"
                )
        if self.frames > 1000:
            out.append(
                f"--fps below 1 pushes proportionally fewer of the {self.frames} frames "
                "(scores are then not comparable with 1 FPS runs)"
            )
        if self.trajectories > 1:
            out.append(
                "--shard I/N splits the trajectories over machines (join with `apmbench-grpc "
                "merge`)"
            )
        return out


def project(
    suite: OpaqueSuite,
    dataset: SuiteDataset,
    trajectories: Iterable[Trajectory],
    persistence: Persistence,
    can_import: bool,
    fps: float,
    start_s: float,
    spare: bool,
    decoys: bool = True,
    later_start_s: float | None = None,
) -> Projection:
    count = starts = frames = queries = 0
    for trajectory in trajectories:
        count += 1
        for segment in suite.plan(dataset, trajectory, can_import):
            queries += len(segment.asks)
            starts += segment.last_session - segment.first_session + 1
            for index in range(segment.first_session, segment.last_session + 1):
                stop = segment.stop_in(index, decoys)
                times = frame_times(trajectory.sessions[index], fps)
                frames += sum(1 for t in times if stop is None or t <= stop)
    # The first start, before any segment; in `restart` mode each segment's sessions add one.
    starts = 1 + starts if persistence is Persistence.RESTART else 1
    return Projection(count, starts, frames, queries, start_s, spare, later_start_s)
