"""Measures every suite reports the same way: latency, ingest and storage (APM-Bench B.3, Eq. 2).

Each suite decides which records a measure runs over (APM-Bench, for one,
keeps Evidence Availability replays out of the latency means); the formulas
live here once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean
from typing import NotRequired, TypedDict

import numpy as np


class Summary(TypedDict):
    """A distribution: its size, mean and percentiles (None when empty)."""

    n: int
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None


class Timed(TypedDict):
    """What the latency measures read of an instance row (the runner's timings)."""

    ttft_s: float | None
    total_s: float
    rtf: float | None
    time_to_answer_s: NotRequired[float | None]


class Latency(TypedDict):
    time_to_first_token_s: Summary
    time_to_answer_s: NotRequired[Summary]
    """When the streamed prefix first determined the parsed answer (absent in older reports)."""
    full_response_s: Summary
    real_time_factor: Summary
    queries_without_output: int


class Ingest(TypedDict):
    main_pass_ingest_s: float
    main_pass_frames: int
    main_pass_frames_per_s: float | None
    main_pass_user_turns: int
    """What the stored memory could be made of besides frames (see the suite's report)."""


class LatencyAndIngest(Latency, Ingest):
    """A report's `latency` where all of its queries are timed together."""


class Pushed(TypedDict):
    """What the ingest and storage measures read of a session record."""

    trajectory_id: str
    index: int
    duration_s: float
    frames: int
    ingest_s: float
    state_bytes: int
    user_turns: int


class PriorState(TypedDict):
    bytes: int
    cumulative_hours: float


class TrajectoryStorage(TypedDict):
    trajectory_id: str
    B_peak_bytes: int
    D_peak_hours: float
    peak_after_session: int
    bytes_per_hour: float
    prior_states: list[PriorState]


class Storage(TypedDict):
    trajectories_counted: int
    storage_per_hour_bytes: float | None
    storage_per_hour_mib: float | None
    peak_bytes_mean: float | None
    peak_bytes_max: int | None
    peak_rule: str
    peak_rule_text: str
    trajectories: list[TrajectoryStorage]


def summary(values: Sequence[float]) -> Summary:
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p90": None, "p99": None}
    arr = np.asarray(values, dtype=float)
    return {
        "n": len(values),
        "mean": float(arr.mean()),
        "p50": float(np.percentile(arr, 50)),
        "p90": float(np.percentile(arr, 90)),
        "p99": float(np.percentile(arr, 99)),
    }


def latency_of(rows: Sequence[Timed]) -> Latency:
    return {
        "time_to_first_token_s": summary([r["ttft_s"] for r in rows if r["ttft_s"] is not None]),
        # When the streamed prefix first determined the parsed answer (no cheap first chunk).
        "time_to_answer_s": summary(
            [t for r in rows if (t := r.get("time_to_answer_s")) is not None]
        ),
        "full_response_s": summary([r["total_s"] for r in rows]),
        "real_time_factor": summary([r["rtf"] for r in rows if r["rtf"] is not None]),
        "queries_without_output": sum(r["ttft_s"] is None for r in rows),
    }


def ingest(sessions: Sequence[Pushed]) -> Ingest:
    """The main pass's frames and ingest time, and the rate they give."""
    frames = sum(s["frames"] for s in sessions)
    seconds = sum(s["ingest_s"] for s in sessions)
    return {
        "main_pass_ingest_s": seconds,
        "main_pass_frames": frames,
        "main_pass_frames_per_s": frames / seconds if seconds > 0 else None,
        "main_pass_user_turns": sum(s["user_turns"] for s in sessions),
    }


PEAK_RULE = "last"
PEAK_RULE_TEXT = (
    "D_peak = cumulative prior-session hours up to the last completed session at which "
    "the peak state size is held (a memory that stays at its peak is charged for all "
    "the hours it covers)"
)


def latency_and_ingest(rows: Sequence[Timed], sessions: Sequence[Pushed]) -> LatencyAndIngest:
    """`latency_of` all the rows and the main pass's `ingest`, in one record."""
    return {**latency_of(rows), **ingest(sessions)}


def storage(sessions: Sequence[Pushed]) -> Storage:
    """Eq. 2 and Table 10.

    Per trajectory, the prior-session states are the exports after every
    session but the last (the last export is never carried into a later
    session). B_peak is the largest. The paper does not say which occurrence
    defines D_peak when the peak repeats; `PEAK_RULE_TEXT` is the rule used,
    and every trajectory's prior states are recorded (`trajectories`) so the
    number can be recomputed under another rule. Trajectories with a single
    session have no prior-session state and are not counted.
    """
    by_traj: dict[str, list[Pushed]] = defaultdict(list)
    for s in sessions:
        by_traj[s["trajectory_id"]].append(s)
    rates: list[float] = []
    peaks: list[int] = []
    per_trajectory: list[TrajectoryStorage] = []
    for tid, rows in by_traj.items():
        rows = sorted(rows, key=lambda r: r["index"])
        prior = rows[:-1]
        if not prior:
            continue
        peak = max(r["state_bytes"] for r in prior)
        at = max(i for i, r in enumerate(prior) if r["state_bytes"] == peak)
        hours = sum(r["duration_s"] for r in prior[: at + 1]) / 3600.0
        rates.append(peak / hours)
        peaks.append(peak)
        cumulative = 0.0
        states: list[PriorState] = []
        for r in prior:
            cumulative += r["duration_s"] / 3600.0
            states.append({"bytes": r["state_bytes"], "cumulative_hours": cumulative})
        per_trajectory.append(
            {
                "trajectory_id": tid,
                "B_peak_bytes": peak,
                "D_peak_hours": hours,
                "peak_after_session": at,
                "bytes_per_hour": peak / hours,
                "prior_states": states,
            }
        )
    mib = float(1 << 20)
    return {
        "trajectories_counted": len(rates),
        "storage_per_hour_bytes": fmean(rates) if rates else None,
        "storage_per_hour_mib": fmean(rates) / mib if rates else None,
        "peak_bytes_mean": fmean(peaks) if peaks else None,
        "peak_bytes_max": max(peaks) if peaks else None,
        "peak_rule": PEAK_RULE,
        "peak_rule_text": PEAK_RULE_TEXT,
        "trajectories": sorted(per_trajectory, key=lambda t: t["trajectory_id"]),
    }
