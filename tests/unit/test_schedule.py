"""Which replays run for which candidates."""

from __future__ import annotations

from pathlib import Path

from apmbench.adapters.sdk.types import Choice, UserTurnKind
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


def trajectory(sessions: int) -> Trajectory:
    return Trajectory(
        "T",
        "",
        tuple(
            Session(f"S{i}", "DAY1", i * HOUR, i * HOUR + 600_000, Path("v.mp4"))
            for i in range(sessions)
        ),
    )


def probe(pid: str, session: int, offset_ms: int = 60_000, **kw: object) -> Probe:
    return Probe(pid, session, session * HOUR + offset_ms, "prompt", **kw)  # type: ignore[arg-type]


def dataset(candidates: list[Candidate], sessions: int = 5) -> Dataset:
    return Dataset(Path("."), "t", (trajectory(sessions),), tuple(candidates), "hash")


def candidate(cid: str, task: str, probes: list[Probe], turns: tuple[Turn, ...] = ()) -> Candidate:
    choices = tuple(Choice(o, o) for o in "ABCD")
    return Candidate(cid, "T", task, "q", choices, "A", tuple(probes), turns)


def test_main_pass_asks_every_multiple_choice_question_in_time_order() -> None:
    d = dataset([candidate("b", "ER", [probe("b", 3)]), candidate("a", "OCR", [probe("a", 1)])])
    main = plan_trajectory(d, d.trajectories[0], can_import=True)[0]
    assert main.kind == "main" and (main.first_session, main.last_session) == (0, 4)
    assert [a.instance_id for a in main.asks] == ["a", "b"]
    assert not main.stop_after_last_ask and main.snapshot_after is None


def test_fork_starts_from_the_snapshot_before_its_first_turn() -> None:
    reg = Turn(1, HOUR + 5_000, UserTurnKind.REGISTRATION, "remind me")
    marker = Turn(3, 3 * HOUR + 1_000, UserTurnKind.INTERVAL_MARKER, "begins")
    prm = candidate(
        "p", "PRM",
        [probe("p#pos0", 3, turns=(marker,), positive=True),
         probe("p#neg0", 3, 30_000, turns=(marker,), positive=False)],
        turns=(reg,),
    )  # fmt: skip
    d = dataset([prm])
    forks = [s for s in plan_trajectory(d, d.trajectories[0], can_import=True) if s.kind == "fork"]
    assert [f.name for f in forks] == ["p#pos0", "p#neg0"]  # one instance per interval probe
    assert all((f.first_session, f.snapshot_after, f.last_session) == (1, 0, 3) for f in forks)
    assert forks[0].turns == (reg, marker)
    replay = plan_trajectory(d, d.trajectories[0], can_import=False)[1]
    assert (replay.first_session, replay.snapshot_after) == (0, None)


def test_fork_in_the_first_session_starts_empty() -> None:
    q = Turn(0, 0, UserTurnKind.QUESTION, "which?")
    era = candidate("e", "ERA", [probe("e#neg0", 0, 10_000), probe("e#pos", 0, 20_000)], (q,))
    d = dataset([era])
    forks = plan_trajectory(d, d.trajectories[0], can_import=True)[1:]
    assert [(f.first_session, f.snapshot_after, f.last_session) for f in forks] == [
        (0, None, 0)
    ] * 2


def test_evidence_availability_replays_the_two_most_recent_sessions() -> None:
    ea = [candidate("x", "EA", [probe("x", 4)]), candidate("y", "EA", [probe("y", 4, 90_000)])]
    early = candidate("z", "EA", [probe("z", 1)])
    d = dataset([*ea, early])
    replays = [s for s in plan_trajectory(d, d.trajectories[0], True) if s.kind == "recent"]
    assert [(r.first_session, r.last_session, r.snapshot_after) for r in replays] == [
        (0, 1, None),
        (2, 4, None),
    ]
    assert [a.instance_id for a in replays[1].asks] == ["x", "y"]


def test_each_era_and_rcr_probe_is_its_own_instance_from_the_candidates_fork_point() -> None:
    # Section 3.3: "each candidate contains probes at precise timestamps labeled
    # as SILENT or INTERVENE, treating each probe as an independent runtime
    # instance". A system must not see an earlier probe's question and its own
    # answer when it is asked the next one.
    q = Turn(2, 2 * HOUR, UserTurnKind.QUESTION, "which?")
    era = candidate(
        "e", "ERA",
        [probe("e#neg0", 2, 10_000, positive=False), probe("e#neg1", 2, 20_000, positive=False),
         probe("e#pos", 2, 30_000, positive=True)],
        (q,),
    )  # fmt: skip
    reg = Turn(3, 3 * HOUR + 1_000, UserTurnKind.REGISTRATION, "remind me")
    rcr = candidate(
        "r", "RCR",
        [probe("r#neg0", 3, 5_000, positive=False), probe("r#pos", 3, 9_000, positive=True)],
        (reg,),
    )  # fmt: skip
    d = dataset([era, rcr])
    forks = [s for s in plan_trajectory(d, d.trajectories[0], True) if s.kind == "fork"]
    assert [[a.instance_id for a in f.asks] for f in forks] == [
        ["e#neg0"], ["e#neg1"], ["e#pos"], ["r#neg0"], ["r#pos"]
    ]  # fmt: skip
    assert [(f.first_session, f.snapshot_after) for f in forks] == [(2, 1)] * 3 + [(3, 2)] * 2
    assert all(f.turns == (q,) for f in forks[:3]) and all(f.turns == (reg,) for f in forks[3:])
