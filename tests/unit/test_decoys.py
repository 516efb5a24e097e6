"""Decoys: every replay of a session sends its interval markers and ends a push at every
question time of it, whichever replay it is, and nothing of that is asked or scored."""

from __future__ import annotations

from pathlib import Path

from apmbench.adapters.sdk.types import Choice, Frame, FrameEncoding, UserTurn, UserTurnKind
from apmbench.harness.run.executor import _merge
from apmbench.harness.run.plan import Ask, Cut, Segment
from apmbench.harness.suites.apmbench.dataset import (
    Candidate,
    Dataset,
    Probe,
    Session,
    Trajectory,
    Turn,
)
from apmbench.harness.suites.apmbench.plan import plan_trajectory

HOUR = 3_600_000
MARKER = UserTurnKind.INTERVAL_MARKER


def at(session: int, seconds: int) -> int:
    return session * HOUR + seconds * 1000


def window(pid: str, session: int, start_s: int, end_s: int) -> Probe:
    marker = Turn(session, at(session, start_s), MARKER, f"begins at {start_s}")
    return Probe(pid, session, at(session, end_s), "p", at(session, start_s), (marker,))


def candidate(cid: str, task: str, probes: list[Probe], turns: tuple[Turn, ...] = ()) -> Candidate:
    choices = tuple(Choice(o, o) for o in "ABCD")
    return Candidate(cid, "T", task, "q", choices, "A", tuple(probes), turns)


def plan() -> list[Segment]:
    sessions = tuple(
        Session(f"S{i}", "DAY1", at(i, 0), at(i, 600), Path("v.mp4")) for i in range(3)
    )
    question = Turn(1, at(1, 0), UserTurnKind.QUESTION, "which first?")
    registration = Turn(1, at(1, 20), UserTurnKind.REGISTRATION, "remind me")
    candidates = (
        candidate("mc", "ER", [Probe("mc", 1, at(1, 100), "p")]),
        candidate("mpa", "MPA", [window("mpa#pos0", 1, 50, 54), window("mpa#neg0", 1, 200, 205)]),
        candidate("tpg", "TPG", [window("tpg#pos0", 1, 52, 58)]),
        candidate(
            "era", "ERA", [Probe("era#neg0", 1, at(1, 8), "p"), Probe("era#pos", 1, at(1, 30), "p")],
            (question,),
        ),
        candidate("rcr", "RCR", [Probe("rcr#pos", 1, at(1, 40), "p")], (registration,)),
        candidate("ea", "EA", [Probe("ea", 2, at(2, 60), "p")]),
    )  # fmt: skip
    dataset = Dataset(Path("."), "t", (Trajectory("T", "", sessions),), candidates, "hash")
    return plan_trajectory(dataset, dataset.trajectories[0], can_import=True)


def by_name(segments: list[Segment]) -> dict[str, Segment]:
    return {s.name: s for s in segments}


ASK_TIMES_1 = [at(1, s) for s in (8, 30, 40, 54, 58, 100, 205)]
MARKERS_1 = [at(1, s) for s in (50, 52, 200)]


def sent(segment: Segment, session: int) -> list[Turn]:
    stop = segment.stop_in(session)
    turns = segment.turns_in(session) + segment.decoys_in(session)
    return sorted((t for t in turns if stop is None or t.time_ms <= stop), key=lambda t: t.time_ms)


def test_every_replay_of_a_session_sends_its_markers_up_to_where_it_stops() -> None:
    for segment in plan():
        if not segment.first_session <= 1 <= segment.last_session:
            continue
        stop = segment.stop_in(1)
        markers = [t.time_ms for t in sent(segment, 1) if t.kind is MARKER]
        assert markers == [m for m in MARKERS_1 if stop is None or m <= stop], segment.name


def test_every_replay_ends_a_push_at_every_question_time_of_its_sessions() -> None:
    for segment in plan():
        if not segment.first_session <= 1 <= segment.last_session:
            continue
        stop = segment.stop_in(1)
        ends = {c.time_ms for c in segment.cuts_in(1)} | {a.time_ms for a in segment.asks_in(1)}
        assert sorted(ends) == [t for t in ASK_TIMES_1 if stop is None or t <= stop], segment.name


def test_an_era_question_and_a_registration_stay_in_their_own_candidates_forks() -> None:
    segments = plan()
    for segment in segments:
        assert all(t.kind is MARKER for t in segment.decoys), segment.name
        own = {t.kind for t in segment.turns}
        if segment.name.startswith("era#"):
            assert own == {UserTurnKind.QUESTION}
        elif segment.name.startswith("rcr#"):
            assert own == {UserTurnKind.REGISTRATION}
        else:
            assert own <= {MARKER}, segment.name


def test_a_fork_goes_on_past_its_question_to_the_second_question_time() -> None:
    forks = by_name(plan())
    # ERA's forks mark themselves with the question turn: each runs to the candidate's last
    # checkpoint (30 s), then past two more question times of any replay (RCR's at 40 s,
    # MPA's at 54 s).
    assert forks["era#neg0"].stop_in(1) == forks["era#pos"].stop_in(1) == at(1, 54)
    assert forks["mpa#pos0"].stop_in(1) == at(1, 100)  # TPG's at 58 s, then MC's
    assert forks["tpg#pos0"].stop_in(1) == at(1, 205)  # MC's at 100 s, then MPA's negative
    assert forks["mpa#neg0"].stop_in(1) == at(1, 600)  # nothing later: the session's end
    assert forks["ea@S2"].stop_in(2) == at(2, 600)
    assert forks["main"].stop_in(1) is None  # the main pass plays every session to its end


def test_decoys_are_never_asked_and_switched_off_leave_the_old_plan() -> None:
    forks = by_name(plan())
    assert [a.instance_id for a in forks["mpa#pos0"].asks] == ["mpa#pos0"]
    assert [a.instance_id for a in forks["main"].asks] == ["mc"]
    # A marker inside a probe's own interval is another probe's (TPG's at 52 s), sent as
    # in every other replay; its own marker is sent once, as its own turn.
    mpa = forks["mpa#pos0"]
    assert [t.time_ms for t in mpa.turns] == [at(1, 50)]
    assert [t.time_ms for t in mpa.decoys] == [at(1, 52)]
    assert mpa.stop_in(1, decoys=False) == at(1, 54)


def test_a_cut_ends_a_push_where_a_question_would() -> None:
    frames = iter(Frame(t, FrameEncoding.JPEG, 1, 1, b"") for t in (0, 1000, 2000, 3000))
    turn = Turn(0, 1000, MARKER, "m")
    ask = Ask("q", 0, 2000, None, {})  # type: ignore[arg-type]
    cut = Cut(0, 1000)
    items = list(_merge(frames, [turn], [ask], [cut]))
    kinds = [type(i).__name__ for i in items]
    # At equal times: frame, then turn, then the ask or cut, as at a question.
    assert kinds == ["Frame", "Frame", "UserTurn", "Cut", "Frame", "Ask", "Frame"]
    assert isinstance(items[2], UserTurn) and items[2].time_ms == 1000
