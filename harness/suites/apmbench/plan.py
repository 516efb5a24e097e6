"""Per trajectory, what to run: the main pass, the forks and the Evidence Availability replays.

A `Segment` is one replay over consecutive sessions of one trajectory, with
the user turns it injects and the probes it asks. The runner executes
segments; this module only decides them:

- main pass: every session once, every multiple-choice question at its time;
- a fork per adaptive candidate (ERA, RCR) or per interval probe (MPA, PRM,
  TPG, whose probes each carry their own interval marker, so that each probe
  stays an independent runtime instance as in the paper): it starts from the
  snapshot taken at the end of the session before its first turn, or replays
  from the start when the system cannot import;
- per session with Evidence Availability questions: an empty memory, then the
  two most recent completed sessions and the current session's causal prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.dataset import Candidate, Dataset, Probe, Trajectory, Turn


@dataclass(frozen=True)
class Ask:
    candidate: Candidate
    probe: Probe


@dataclass(frozen=True)
class Segment:
    kind: str  # "main" | "fork" | "ea"
    name: str
    first_session: int
    last_session: int
    # Import the main pass's snapshot taken after this session index; None = empty memory.
    snapshot_after: int | None
    turns: tuple[Turn, ...]
    asks: tuple[Ask, ...]
    # Stop the last session right after its last question (forks and EA replays).
    stop_after_last_ask: bool

    def turns_in(self, session_index: int) -> list[Turn]:
        return [t for t in self.turns if t.session_index == session_index]

    def asks_in(self, session_index: int) -> list[Ask]:
        return [a for a in self.asks if a.probe.session_index == session_index]


def _sorted_asks(asks: list[Ask]) -> tuple[Ask, ...]:
    return tuple(sorted(asks, key=lambda a: (a.probe.time_ms, a.probe.probe_id)))


def _fork(name: str, candidate: Candidate, probes: tuple[Probe, ...], can_import: bool) -> Segment:
    turns = tuple(
        sorted(
            (*candidate.turns, *(t for p in probes for t in p.turns)),
            key=lambda t: (t.time_ms, t.kind.value),
        )
    )
    first_needed = min([t.session_index for t in turns] + [p.session_index for p in probes])
    if can_import:
        first, snapshot = first_needed, (first_needed - 1 if first_needed > 0 else None)
    else:
        first, snapshot = 0, None
    return Segment(
        kind="fork",
        name=name,
        first_session=first,
        last_session=max(p.session_index for p in probes),
        snapshot_after=snapshot,
        turns=turns,
        asks=_sorted_asks([Ask(candidate, p) for p in probes]),
        stop_after_last_ask=True,
    )


def plan_trajectory(dataset: Dataset, trajectory: Trajectory, can_import: bool) -> list[Segment]:
    candidates = dataset.candidates_of(trajectory.trajectory_id)
    last = len(trajectory.sessions) - 1
    segments = [
        Segment(
            kind="main",
            name="main",
            first_session=0,
            last_session=last,
            snapshot_after=None,
            turns=(),
            asks=_sorted_asks(
                [Ask(c, p) for c in candidates if c.task in tasks.MCQA_TASKS for p in c.probes]
            ),
            stop_after_last_ask=False,
        )
    ]
    for c in candidates:
        if c.task in ("ERA", "RCR"):
            segments.append(_fork(c.candidate_id, c, c.probes, can_import))
        elif c.task in ("MPA", "PRM", "TPG"):
            for p in c.probes:
                segments.append(_fork(p.probe_id, c, (p,), can_import))
    by_session: dict[int, list[Ask]] = {}
    for c in candidates:
        if c.task == tasks.EVIDENCE_AVAILABILITY:
            for p in c.probes:
                by_session.setdefault(p.session_index, []).append(Ask(c, p))
    for index in sorted(by_session):
        segments.append(
            Segment(
                kind="ea",
                name=f"ea@{trajectory.sessions[index].session_id}",
                first_session=max(0, index - 2),
                last_session=index,
                snapshot_after=None,
                turns=(),
                asks=_sorted_asks(by_session[index]),
                stop_after_last_ask=True,
            )
        )
    return segments
