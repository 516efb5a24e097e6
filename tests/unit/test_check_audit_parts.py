"""The audits' judgments and their aggregation, on hand-made records."""

from __future__ import annotations

import random
from typing import Any

from apmbench.harness.run.audits.persistence import compare_answers, sampled_trajectories
from apmbench.harness.run.audits.queries import TrajectoryAudit
from apmbench.harness.run.audits.repeat import confirm_repeat_faster, faster
from apmbench.harness.run.audits.settings import AuditSettings
from apmbench.harness.run.audits.summary import audit_headline, audit_summary


def test_a_speed_up_counts_only_above_the_noise() -> None:
    s = AuditSettings(speedup=5.0, min_seconds=0.05)
    assert faster(0.2, 0.001, s)
    assert not faster(0.2, 0.05, s)  # 4x: not enough
    assert not faster(0.004, 0.0001, s)  # 40x, but 4 ms is noise
    assert faster(1.0, 0.0, s)


def repeated(instance: str, first: float, fresh: float) -> dict[str, Any]:
    seconds = {"first": first, "fresh_query_id": fresh, "same_query_id": fresh}
    return {"instance_id": instance, "seconds": seconds, "flags": []}


def test_repeat_faster_needs_a_second_question() -> None:
    s = AuditSettings()
    # A content cache: both questions' repeats far faster than their first asks.
    cheat = confirm_repeat_faster([repeated("q1", 0.12, 0.001), repeated("q2", 0.3, 0.002)], s)
    assert [r["flags"] for r in cheat] == [["repeat_faster"], ["repeat_faster"]]
    assert [r["repeat_faster_confirmed_by"] for r in cheat] == [["q2"], ["q1"]]
    # An honest system on a loaded machine: one first ask stalled 0.25 s. The rule alone
    # is met (the old decision, on that one observation, flagged it); the other question's
    # repeat is not faster, so it is kept as unconfirmed and not flagged.
    stalled = [repeated("q1", 0.254, 0.004), repeated("q2", 0.004, 0.005)]
    assert faster(0.254, 0.004, s)
    honest = confirm_repeat_faster(stalled, s)
    assert [r["flags"] for r in honest] == [[], []]
    assert "repeat_faster_unconfirmed" in honest[0] and "repeat_faster_unconfirmed" not in honest[1]
    assert stalled[0]["flags"] == []  # the records given are not changed
    # Alone in its trajectory (no question to confirm it): unconfirmed, not flagged.
    assert confirm_repeat_faster([repeated("q1", 0.12, 0.001)], s)[0]["flags"] == []
    refused = {"instance_id": "q3", "flags": ["repeat_failed"], "error": "x"}
    assert confirm_repeat_faster([refused], s) == [refused]


def noisy(rng: random.Random, cost_s: float) -> float:
    """One ask on a loaded machine: a tenth of them stalled 60-300 ms."""
    return cost_s + (rng.uniform(0.06, 0.3) if rng.random() < 0.1 else 0.0)


def test_on_a_noisy_clock_noise_must_strike_two_first_asks() -> None:
    # 1000 trajectories of two repeated questions each, every ask on the same noisy clock:
    # an honest system costs 4 ms per ask, a content cache 120 ms on a first ask, 1 ms on
    # a repeat. The decision on one observation flagged one honest repeat in ten; needing
    # two questions, about one in a hundred (noise striking both first asks).
    s, rng = AuditSettings(), random.Random(7)
    old = new = cheats = cheats_old = 0
    for _ in range(1000):
        honest = [repeated(f"q{i}", noisy(rng, 0.004), noisy(rng, 0.004)) for i in range(2)]
        old += sum(faster(r["seconds"]["first"], r["seconds"]["fresh_query_id"], s) for r in honest)
        new += sum("repeat_faster" in r["flags"] for r in confirm_repeat_faster(honest, s))
        cheat = [repeated(f"q{i}", noisy(rng, 0.12), noisy(rng, 0.001)) for i in range(2)]
        cheats += all("repeat_faster" in r["flags"] for r in confirm_repeat_faster(cheat, s))
        cheats_old += any(faster(r["seconds"]["first"], r["seconds"]["fresh_query_id"], s)
                          for r in cheat)  # fmt: skip
    print({"honest_repeats_flagged": {"one_observation": old, "two_questions": new},
           "cheating_trajectories_flagged": {"one_observation": cheats_old,
                                             "two_questions": cheats}})  # fmt: skip
    assert new <= old / 5 and old > 100
    assert cheats > 750  # a stalled repeat (fresh ask) hides a cache only from that pair


def test_a_lone_speed_up_samples_one_question_to_confirm_it() -> None:
    audit = TrajectoryAudit(AuditSettings(caching_queries=1), caching={"q1"})
    audit.main_sessions = {"q1": 0, "q2": 0, "q3": 1, "q4": 2}
    audit.repeats = [repeated("q1", 0.2, 0.001)]
    audit._confirm_later(0)
    assert audit.caching == {"q1", "q3"} and audit.confirmer == "q3"  # the next one to be asked
    audit.repeats.append(repeated("q3", 0.004, 0.004))  # not faster: the speed-up stays alone
    audit._confirm_later(1)
    assert audit.caching == {"q1", "q3"}  # one chance, not one question after another
    # A sampled question still to come is the confirmation: nothing more is sampled.
    pending = TrajectoryAudit(AuditSettings(), caching={"q1", "q4"})
    pending.main_sessions, pending.repeats = audit.main_sessions, audit.repeats[:1]
    pending._confirm_later(0)
    assert pending.caching == {"q1", "q4"} and not pending.confirmer


def row(instance: str, text: str, **parsed: Any) -> dict[str, Any]:
    return {"instance_id": instance, "raw_output": text, "answer": None, "decision": None, **parsed}


def test_compare_answers_flags_parsed_differences_only() -> None:
    main = {"instances": [row("a", '{"answer":"A"}', answer="A"),
                          row("b", "Answer: B.", answer="B"),
                          row("c", '{"decision":"SILENT"}', decision="SILENT")]}  # fmt: skip
    rerun = {"instances": [row("a", '{"answer": "A"}', answer="A"),
                           row("b", "Answer: B.", answer="B"),
                           row("c", '{"decision":"INTERVENE"}', decision="INTERVENE")]}  # fmt: skip
    compared = compare_answers(main, rerun)
    assert compared["instances"] == 3 and compared["same_text"] == 1
    assert [d["instance_id"] for d in compared["differing"]] == ["c"]
    missing = compare_answers(main, {"instances": rerun["instances"][:1]})
    assert {d["instance_id"] for d in missing["differing"]} == {"b", "c"}


def test_sampling_is_seeded() -> None:
    ids = [f"T{i:02d}" for i in range(20)]
    a = sampled_trajectories(AuditSettings(persistence_trajectories=3, seed=1), ids)
    assert a == sampled_trajectories(AuditSettings(persistence_trajectories=3, seed=1), ids)
    assert len(a) == 3 and a <= set(ids)
    assert len(sampled_trajectories(AuditSettings(persistence_trajectories=50), ids)) == 20


def audit(**parts: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "state_mutation": [],
        "caching": {"repeats": []},
        "first_token": {"queries": 4, "flagged": []},
        "persistence": {"status": "not_sampled"},
    }
    return {**base, **parts}


def test_summary_and_headline() -> None:
    assert audit_summary([{"trajectory_id": "T1"}]) is None  # not audited
    records = [
        {"trajectory_id": "T1", "audit": audit(
            state_mutation=[{"instance_id": "q1", "verdict": "changed"},
                            {"instance_id": "q2", "verdict": "unchanged"}],
            caching={"repeats": [{"instance_id": "q3", "flags": ["repeat_faster"]},
                                 {"instance_id": "q4", "flags": []}]},
        )},
        {"trajectory_id": "T2", "audit": audit(
            caching={"repeats": [], "skipped": "persistence trust: ..."},
            first_token={"queries": 2, "flagged": [{"instance_id": "q5", "problem": "x"}]},
            persistence={"status": "compared", "compared_with": "trust", "instances": 2,
                         "same_text": 1, "differing": [{"instance_id": "q6"}]},
        )},
    ]  # fmt: skip
    summary = audit_summary(records)
    assert summary is not None
    assert summary["flags"] == 4 and summary["clean"] is False
    assert summary["state_mutation"]["sampled"] == 2
    assert summary["state_mutation"]["changed"][0]["trajectory_id"] == "T1"
    assert [r["instance_id"] for r in summary["caching"]["flagged"]] == ["q3"]
    assert summary["caching"]["skipped"] == ["persistence trust: ..."]
    assert summary["first_token"]["queries"] == 6
    assert summary["persistence"]["differing"] == [{"instance_id": "q6", "trajectory_id": "T2"}]
    headline = audit_headline(summary)
    assert headline["flags"] == 4 and headline["caching"]["flagged"] == 1
    assert headline["persistence"] == {"trajectories_compared": 1, "differing": 1, "not_run": []}
