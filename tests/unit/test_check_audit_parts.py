"""The audits' judgments and their aggregation, on hand-made records."""

from __future__ import annotations

from typing import Any

from apmbench.harness.run.audits.persistence import compare_answers, sampled_trajectories
from apmbench.harness.run.audits.queries import AuditSettings
from apmbench.harness.run.audits.repeat import faster
from apmbench.harness.run.audits.summary import audit_headline, audit_summary


def test_a_speed_up_counts_only_above_the_noise() -> None:
    s = AuditSettings(speedup=5.0, min_seconds=0.05)
    assert faster(0.2, 0.001, s)
    assert not faster(0.2, 0.05, s)  # 4x: not enough
    assert not faster(0.004, 0.0001, s)  # 40x, but 4 ms is noise
    assert faster(1.0, 0.0, s)


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
