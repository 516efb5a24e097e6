"""Decoys: what every replay of a session sends, so that the wire does not say when a question
comes.

A session is replayed many times: in the main pass, in the fork of every adaptive probe that
reaches it, in Evidence Availability replays. Each replay used to carry only its own turns,
end its pushes only at its own questions and stop at its last one, so an MPA, PRM or TPG
interval marker (the probe's own "the evaluation interval begins now" turn, Appendix D) was
followed by its question 3-6 s later, and a depth-3 tree on what a server sees predicted "a
question follows this push" at a held-out balanced accuracy of 0.81 on `small` (red team 3:
0.750): a system could do its query work in that push and show a time to first token near
zero (tests/integration/test_question_leak.py).

Now, in every segment (`with_decoys`):

- every interval marker of the sessions it replays is sent, its own and the other probes'
  (decoys: sent, never asked about, never scored), up to where it stops; a marker therefore
  also arrives inside another probe's interval, as it would in any other replay;
- a push ends at every time any replay of those sessions asks (`Segment.cuts`), so a push
  that ends 3-6 s after a marker is as likely another replay's question time as its own;
- a replay that stops early goes on, asking nothing more, past the next two times any replay
  of the session asks (or to the session's end; `GO_ON_PAST`), so its question is not the
  last thing it sends and later minutes of a session are not mostly its askers';
- the forks of a candidate whose own turns mark them on the wire (an ERA question, a
  registration) all go on to the candidate's last probe first, so those turns do not tell
  the fork of the first checkpoint from the fork of the last.

Up to where it stops, a replay's wire is then the same whichever replay it is, apart from
those own turns: the same frames, markers and push ends. A tree on the same features is at
0.563-0.583 (the test holds it at 0.60 or less, depths 3-5).

The decoys are the dataset's own markers, so their positions and texts come from exactly the
distribution of the real ones. They are decided at plan time, from the dataset, not when a
dataset is generated: a released dataset gets them too and its files stay the paper's. They
need no secret (unlike the random push ends, `harness/run/push_cuts.py`): every replay carries
the same ones, so knowing them tells a system nothing about which replay it is in.

What is kept of the paper's task:

- the marker text is the paper's, each marker names its own start time, and a probe names its
  interval ([start, end)) in its prompt and `interval_start_ms`: a decoy never changes which
  interval is asked about;
- ERA questions and registrations are never decoys: both are obligations (answer at a
  checkpoint, remind when triggered), and one sent where it does not belong would change the
  right answer of another probe;
- question times stay the annotated ones (an interval is asked at its end, a heartbeat at its
  time; the task fixes them), and every probe still runs in its own fork;
- what a fork pushes after its question is never asked about, so no answer can depend on it.

The price is frames pushed: +22.9 % on `small`, +35.8 % on `paper` (docs/guarantees.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from apmbench.adapters.sdk.types import UserTurnKind
from apmbench.harness.media.timeline import Trajectory, Turn
from apmbench.harness.run.plan import Cut, Segment
from apmbench.harness.suites.apmbench.dataset import Candidate

GO_ON_PAST = 2
"""How many later ask times a replay that stops early goes on past its last question to.

Replays stop soon after their questions, so fewer of them cover a session's later minutes,
and a push that ends late at some replay's ask time is more often its own question: with
one, a depth-5 tree read 0.604 from the time into the session and "after a query"; with two
it reads 0.563-0.583 for 6 % more frames on `small`; three give 0.556-0.580 for 12 % (pooled
seeds 0-2 against 7-9, both ways; to the session's end: 0.589 for 57 %)."""


@dataclass(frozen=True)
class SessionWire:
    """What every replay of the trajectory's sessions sends besides its own turns and asks."""

    markers: tuple[Turn, ...]
    """Every interval marker of every probe, once (two probes may share a start)."""
    ask_times: tuple[Cut, ...]
    """Every time a question is asked in some replay."""
    ends_ms: tuple[int, ...]
    """Each session's end."""

    def stop_after(self, session_index: int, after_ms: int) -> int:
        """Where a replay whose last question is at `after_ms` stops: the `GO_ON_PAST`-th
        later time at which some replay of the session asks (the session's end if there are
        fewer)."""
        later = sorted(
            c.time_ms
            for c in self.ask_times
            if c.session_index == session_index and c.time_ms > after_ms
        )
        if len(later) < GO_ON_PAST:
            return self.ends_ms[session_index]
        return later[GO_ON_PAST - 1]


def session_wire(trajectory: Trajectory, candidates: Sequence[Candidate]) -> SessionWire:
    markers: dict[tuple[int, str], Turn] = {}
    asks: set[Cut] = set()
    for c in candidates:
        for p in c.probes:
            asks.add(Cut(p.session_index, p.time_ms))
            for t in p.turns:
                if t.kind is UserTurnKind.INTERVAL_MARKER:
                    markers.setdefault((t.time_ms, t.text), t)
    return SessionWire(
        tuple(sorted(markers.values(), key=lambda t: t.time_ms)),
        tuple(sorted(asks, key=lambda c: c.time_ms)),
        tuple(s.end_ms for s in trajectory.sessions),
    )


def with_decoys(segment: Segment, wire: SessionWire, reach_ms: int | None = None) -> Segment:
    """`segment` with the markers and cuts of the sessions it replays that are not its own
    and, when it stops early, its stop: the `GO_ON_PAST`-th time after its last question (or
    after `reach_ms`, if later: where its siblings' questions end) at which any replay asks."""
    stop: int | None = None
    if segment.stop_after_last_ask and segment.asks:
        last = max(segment.asks[-1].time_ms, reach_ms or 0)
        stop = wire.stop_after(segment.last_session, last)
    sessions = range(segment.first_session, segment.last_session + 1)
    own = {(t.time_ms, t.text) for t in segment.turns}
    asked = {a.time_ms for a in segment.asks}

    def pushed(session_index: int, time_ms: int) -> bool:
        return stop is None or session_index < segment.last_session or time_ms <= stop

    decoys = tuple(
        t
        for t in wire.markers
        if t.session_index in sessions
        and (t.time_ms, t.text) not in own
        and pushed(t.session_index, t.time_ms)
    )
    cuts = tuple(
        c
        for c in wire.ask_times
        if c.session_index in sessions
        and c.time_ms not in asked
        and pushed(c.session_index, c.time_ms)
    )
    return replace(segment, decoys=decoys, cuts=cuts, stop_ms=stop)
