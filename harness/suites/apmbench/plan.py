"""Per trajectory, what to run: the main pass, the forks and the Evidence Availability replays.

The runner executes segments (apmbench.harness.run.plan); this module decides
them from the task table:

- main pass: every session once, every multiple-choice question at its time;
- a fork per adaptive probe (ERA, RCR, MPA, PRM, TPG), so that each probe is
  an independent runtime instance as in the paper: every probe of a candidate
  starts from the candidate's fork point, the snapshot taken at the end of the
  session before its first turn (or replays from the start when the system
  cannot import), and sees the candidate's turns (ERA question, registration)
  and its own interval marker, never another probe's question or answer;
- per session with Evidence Availability questions: an empty memory, then the
  two most recent completed sessions and the current session's causal prefix;
- in every segment, the decoys of the sessions it replays (`decoys`): the other probes'
  interval markers and a push end at every question time of the session, and for a
  segment that stops early, a stop past its last question, so that what arrives on the
  wire does not announce a question.
"""

from __future__ import annotations

from apmbench.adapters.sdk.types import Query
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.plan import Ask, Segment, sorted_asks
from apmbench.harness.suites.apmbench import organisation, prompts
from apmbench.harness.suites.apmbench.answer_formats import format_for, schema_text
from apmbench.harness.suites.apmbench.dataset import Candidate, Dataset, Probe
from apmbench.harness.suites.apmbench.decoys import session_wire, with_decoys
from apmbench.harness.suites.apmbench.tasks import Fork, Metric, spec

# Evidence Availability: the current session and this many completed ones before it.
RECENT_SESSIONS = 2


def query_for(candidate: Candidate, probe: Probe) -> Query:
    """What goes on the wire for one probe: prompts, question and options, never a label."""
    task = spec(candidate.task)
    answer_format = format_for(task)
    # ERA's options went out with its question turn; the schema lists their ids again.
    answer_schema = schema_text(answer_format, candidate.choices if task.needs_option else ())
    if task.metric is Metric.GATED_JUDGE:
        # Adaptive probes: the ERA question was released at session start and is
        # not repeated here (paper section 3.3).
        return Query(
            query_id="",
            time_ms=probe.time_ms,
            kind=task.query_kind,
            system_prompt=prompts.SYSTEM_PROMPT,
            prompt=probe.prompt,
            interval_start_ms=probe.interval_start_ms,
            answer_format=answer_format,
            answer_schema=answer_schema,
        )
    return Query(
        query_id="",
        time_ms=probe.time_ms,
        kind=task.query_kind,
        system_prompt=prompts.SYSTEM_PROMPT,
        prompt=probe.prompt,
        question=candidate.question,
        choices=candidate.choices,
        answer_format=answer_format,
        answer_schema=schema_text(answer_format, candidate.choices),
    )


def ask_for(candidate: Candidate, probe: Probe) -> Ask:
    task = spec(candidate.task)
    return Ask(
        instance_id=probe.probe_id,
        session_index=probe.session_index,
        time_ms=probe.time_ms,
        query=query_for(candidate, probe),
        fields={
            "candidate_id": candidate.candidate_id,
            "trajectory_id": candidate.trajectory_id,
            "task": candidate.task,
            "family": task.family,
        },
    )


def _fork_point(candidate: Candidate) -> int:
    """The first session a candidate needs: its fork starts after the one before it."""
    turns = [*candidate.turns, *(t for p in candidate.probes for t in p.turns)]
    return min([t.session_index for t in turns] + [p.session_index for p in candidate.probes])


def _fork(name: str, candidate: Candidate, probes: tuple[Probe, ...], can_import: bool) -> Segment:
    turns = tuple(
        sorted(
            (*candidate.turns, *(t for p in probes for t in p.turns)),
            key=lambda t: (t.time_ms, t.kind.value),
        )
    )
    first_needed = _fork_point(candidate)
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
        asks=sorted_asks([ask_for(candidate, p) for p in probes]),
        stop_after_last_ask=True,
    )


def _oracle(name: str, trajectory: Trajectory, c: Candidate, probes: tuple[Probe, ...]) -> Segment:
    """An Oracle replay (appendix B.6) of `probes`: an empty memory, then only the frames of
    the candidate's evidence and of these probes' scenes, with the candidate's turns."""
    spans = organisation.oracle_spans(c, trajectory, probes)
    turns = tuple(
        sorted((*c.turns, *(t for p in probes for t in p.turns)), key=lambda t: t.time_ms)
    )
    first = min(
        [i for i, _ in spans] + [t.session_index for t in turns] + [probes[0].session_index]
    )
    return Segment(
        kind="recent",
        name=name,
        first_session=first,
        last_session=max(p.session_index for p in probes),
        snapshot_after=None,
        turns=turns,
        asks=sorted_asks([ask_for(c, p) for p in probes]),
        stop_after_last_ask=True,
        keep_frame=organisation.keeps([span for _, span in spans]),
    )


def plan_trajectory(dataset: Dataset, trajectory: Trajectory, can_import: bool) -> list[Segment]:
    candidates = dataset.candidates_of(trajectory.trajectory_id)
    last = len(trajectory.sessions) - 1
    forks = {c.candidate_id: spec(c.task).fork for c in candidates}
    if dataset.organisation == organisation.ORACLE:
        # Every candidate (every probe, where the task forks per probe) alone.
        forks = {
            cid: (f if f in (Fork.PER_PROBE, Fork.RECENT_SESSIONS) else Fork.PER_CANDIDATE)
            for cid, f in forks.items()
        }
    segments = [
        Segment(
            kind="main",
            name="main",
            first_session=0,
            last_session=last,
            snapshot_after=None,
            turns=(),
            asks=sorted_asks(
                [
                    ask_for(c, p)
                    for c in candidates
                    if forks[c.candidate_id] is Fork.MAIN
                    for p in c.probes
                ]
            ),
            stop_after_last_ask=False,
        )
    ]
    oracle = dataset.organisation == organisation.ORACLE
    if oracle:
        # No main pass: one that asks nothing would measure a Storage/hr no answer rests on
        # (a system can tell it from the replays, whole sessions against evidence spans, and
        # keep nothing there), so an Oracle run reports none.
        segments = []
    for c in candidates:
        if forks[c.candidate_id] is Fork.PER_CANDIDATE:
            if oracle:
                segments.append(_oracle(f"oracle@{c.candidate_id}", trajectory, c, c.probes))
            else:
                segments.append(_fork(c.candidate_id, c, c.probes, can_import))
        elif forks[c.candidate_id] is Fork.PER_PROBE:
            for p in c.probes:
                if oracle:
                    segments.append(_oracle(f"oracle@{p.probe_id}", trajectory, c, (p,)))
                else:
                    segments.append(_fork(p.probe_id, c, (p,), can_import))
    by_session: dict[int, list[Ask]] = {}
    for c in candidates:
        if forks[c.candidate_id] is Fork.RECENT_SESSIONS:
            for p in c.probes:
                by_session.setdefault(p.session_index, []).append(ask_for(c, p))
    for index in sorted(by_session):
        segments.append(
            Segment(
                kind="recent",
                name=f"ea@{trajectory.sessions[index].session_id}",
                first_session=organisation.selected_before(trajectory, index, RECENT_SESSIONS),
                last_session=index,
                snapshot_after=None,
                turns=(),
                asks=sorted_asks(by_session[index]),
                stop_after_last_ask=True,
            )
        )
    wire = session_wire(trajectory, candidates)
    by_id = {c.candidate_id: c for c in candidates}
    return [with_decoys(s, wire, _siblings_end(by_id, s)) for s in segments]


def _siblings_end(candidates: dict[str, Candidate], segment: Segment) -> int | None:
    """Where the forks of a candidate with turns of its own (an ERA question, a
    registration) all run to: its last probe in the fork's last session. Those turns mark
    the candidate's forks on the wire, so each fork goes on to there, and the fork of its
    first checkpoint sends what the fork of its last one does up to that point."""
    if segment.kind != "fork" or not segment.asks:
        return None
    candidate_id = segment.asks[0].fields.get("candidate_id")
    candidate = candidates.get(candidate_id) if isinstance(candidate_id, str) else None
    if candidate is None or not candidate.turns:
        return None
    times = [p.time_ms for p in candidate.probes if p.session_index == segment.last_session]
    return max(times, default=None)
