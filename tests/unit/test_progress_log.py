"""Progress off a terminal: a line per finished trajectory with an ETA, and never a silent minute."""

from __future__ import annotations

import time
from typing import Any

from apmbench.harness.run.progress_log import HEARTBEAT_S, LogProgress, eta_s


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _recorder() -> tuple[list[tuple[str, dict[str, Any]]], Any]:
    lines: list[tuple[str, dict[str, Any]]] = []
    return lines, lambda event, **fields: lines.append((event, fields))


def test_eta_is_the_mean_pace_times_what_remains() -> None:
    assert eta_s(0, 4, 10.0) is None
    assert eta_s(1, 4, 10.0) == 30.0
    assert eta_s(4, 4, 40.0) == 0.0


def test_one_line_per_finished_trajectory_with_counts_elapsed_and_eta() -> None:
    clock = Clock()
    lines, log = _recorder()
    progress = LogProgress("text-log", log=log, clock=clock).callbacks()
    progress.trajectories(4, 1)
    progress.trajectory_started("T002", 3)
    clock.now += 20
    progress.trajectory_done("T002")
    finished = [f for e, f in lines if e == "trajectory finished"]
    assert finished == [
        {
            "system": "text-log",
            "trajectory": "T002",
            "done": "2/4",
            "elapsed_s": 20.0,
            "eta_s": 40.0,
        }
    ]


def test_a_heartbeat_whenever_the_log_was_quiet_for_the_period() -> None:
    assert HEARTBEAT_S < 60
    clock = Clock()
    lines, log = _recorder()
    p = LogProgress("frame-archive", heartbeat_s=HEARTBEAT_S, log=log, clock=clock)
    p.trajectories(2, 0)
    p.trajectory_started("T001", 5)
    p.segment_started(None)  # type: ignore[arg-type]
    clock.now += HEARTBEAT_S - 1
    assert not p.beat()
    clock.now += 2
    assert p.beat()
    event, fields = lines[-1]
    assert event == "still running"
    assert fields["trajectory"] == "T001" and fields["segment"] == "1/5"
    assert not p.beat()  # the heartbeat itself resets the quiet period


def test_the_heartbeat_thread_logs_during_a_long_trajectory() -> None:
    lines, log = _recorder()
    with LogProgress("slow", heartbeat_s=0.2, log=log) as p:
        p.trajectories(1, 0)
        p.trajectory_started("T001", 1)
        time.sleep(0.7)
    beats = [f for e, f in lines if e == "still running"]
    assert len(beats) >= 2


def test_a_heartbeat_before_the_plan_says_preparing() -> None:
    """A system loading for minutes before the plan is known logged `done=0/0`, which read as
    a run with nothing to do."""
    clock = Clock()
    lines, log = _recorder()
    p = LogProgress("vlm", heartbeat_s=HEARTBEAT_S, log=log, clock=clock)
    clock.now += HEARTBEAT_S + 1
    assert p.beat()
    event, fields = lines[-1]
    assert event == "still running" and fields["phase"] == "preparing", fields
    assert "done" not in fields
    p.trajectories(3, 0)
    clock.now += HEARTBEAT_S + 1
    assert p.beat()
    assert lines[-1][1]["done"] == "0/3" and "phase" not in lines[-1][1]
