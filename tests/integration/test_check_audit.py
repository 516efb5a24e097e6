"""`evaluate --audit` on real runs: each broken system is flagged by the audit aimed at it,
an honest one is clean, and auditing does not change a single result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.timing import TIMING

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.audits.settings import AuditSettings
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec

pytestmark = pytest.mark.usefixtures("helper_env")


def audited(
    mini: Path, out: Path, name: str, persistence: Persistence, audit: AuditSettings | None
) -> dict[str, Any]:
    evaluate(
        EvaluateOptions(
            dataset=mini,
            out=out,
            runtime=runtime_spec(system=f"helpers.broken_systems:{name}"),
            persistence=persistence,
            audit=audit,
        )
    )
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def untimed(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def flagged(report: dict[str, Any]) -> dict[str, int]:
    audit = report["audit"]
    return {
        "state_mutation": len(audit["state_mutation"]["changed"]),
        "export_varies": len(audit["state_mutation"]["export_varies"]),
        "export_failed": len(audit["state_mutation"]["export_failed"]),
        "caching": len(audit["caching"]["flagged"]),
        "first_token": len(audit["first_token"]["flagged"]),
        "persistence": len(audit["persistence"]["differing"]),
    }


NONE = {
    "state_mutation": 0,
    "export_varies": 0,
    "export_failed": 0,
    "caching": 0,
    "first_token": 0,
    "persistence": 0,
}


@pytest.mark.slow
def test_an_honest_system_is_clean_and_auditing_changes_no_result(
    mini: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    audited(mini, plain, "Honest", Persistence.RESET, None)
    out = tmp_path / "audited"
    report = audited(mini, out, "Honest", Persistence.RESET, AuditSettings())
    assert untimed(out / "instances.jsonl") == untimed(plain / "instances.jsonl")
    assert untimed(out / "sessions.jsonl") == untimed(plain / "sessions.jsonl")
    assert "audit" not in json.loads((plain / "report.json").read_text())
    audit = report["audit"]
    assert audit["clean"] and flagged(report) == NONE
    assert audit["state_mutation"]["sampled"] == 6  # 3 per trajectory
    assert audit["caching"]["repeated"] == 4 and audit["caching"]["skipped"] == []  # 2 each
    assert audit["first_token"]["queries"] == len(untimed(out / "instances.jsonl"))
    [compared] = audit["persistence"]["compared"]  # one trajectory rerun in restart mode
    assert compared["compared_with"] == "reset" and compared["same_text"] == compared["instances"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["audit"]["clean"] is True and manifest["audit"]["flags"] == 0
    assert manifest["settings"]["audit"]["speedup"] == 5.0


@pytest.mark.slow
def test_a_query_that_writes_to_memory(mini: Path, tmp_path: Path) -> None:
    report = audited(mini, tmp_path / "r", "MutatesInQuery", Persistence.RESET, AuditSettings())
    assert flagged(report) == {**NONE, "state_mutation": 6}
    changed = report["audit"]["state_mutation"]["changed"][0]
    assert changed["before_sha256"] != changed["after_sha256"]


@pytest.mark.slow
def test_a_cache_keyed_on_the_query_id(mini: Path, tmp_path: Path) -> None:
    settings = AuditSettings(mutation_queries=0, caching_queries=1)
    report = audited(mini, tmp_path / "r", "CachesByQueryId", Persistence.RESTART, settings)
    assert flagged(report) == {**NONE, "caching": 2}  # one per trajectory
    for repeat in report["audit"]["caching"]["flagged"]:
        assert repeat["flags"] == ["same_query_id_faster"]
        seconds = repeat["seconds"]
        assert seconds["fresh_query_id"] >= 5 * seconds["same_query_id"]
    # Restart mode: the repeat ran in the process that answered first, before its restart.
    assert report["audit"]["persistence"]["not_run"] == [
        "the run used restart persistence: only exported state crossed a gap"
    ]


# Exclusive: it times asks against each other, and another worker's load can stall the
# confirming ask too (its rule is about one stall, not a host busy with other tests).
@pytest.mark.slow
@pytest.mark.exclusive
def test_one_stalled_fresh_ask_is_not_a_cache(mini: Path, tmp_path: Path) -> None:
    # The same 5x rule as above, met by one descheduled ask: the confirming second fresh
    # id comes back at normal speed, so nothing is flagged (before the confirmation, this
    # system was flagged on every repeat).
    settings = AuditSettings(mutation_queries=0, caching_queries=1)
    report = audited(mini, tmp_path / "r", "StalledOnce", Persistence.RESTART, settings)
    assert flagged(report) == NONE and report["audit"]["caching"]["repeated"] == 2
    # The stall did happen and met the rule: each repeat needed its confirming ask.
    records = "\n".join(p.read_text() for p in (tmp_path / "r").rglob("*.json*"))
    assert records.count('"fresh_query_id_again"') >= 2


@pytest.mark.slow
def test_a_cache_keyed_on_content(mini: Path, tmp_path: Path) -> None:
    # Every repeat is fast, whatever the ids: one sampled question per trajectory meets the
    # rule, the question sampled to confirm it meets it too, and both are flagged.
    settings = AuditSettings(mutation_queries=0, caching_queries=1)
    report = audited(mini, tmp_path / "r", "CachesByContent", Persistence.RESTART, settings)
    caching = report["audit"]["caching"]
    assert flagged(report) == {**NONE, "caching": len(caching["flagged"])}
    assert len(caching["flagged"]) >= 2
    for repeat in caching["flagged"]:
        assert repeat["flags"] == ["repeat_faster"]
        assert repeat["repeat_faster_confirmed_by"]
        assert repeat["seconds"]["first"] >= 5 * repeat["seconds"]["fresh_query_id"]


@pytest.mark.exclusive  # it times asks against each other, as the one above
def test_one_stalled_first_ask_is_not_a_cache(mini: Path, tmp_path: Path) -> None:
    # The 5x rule met by one descheduled first ask (every question is sampled, so the stalled
    # one is too): no second question's repeat is as much faster, so nothing is flagged
    # (with the rule alone, that question was flagged).
    settings = AuditSettings(mutation_queries=0, caching_queries=100, persistence_trajectories=0)
    report = audited(mini, tmp_path / "r", "StalledFirstAsk", Persistence.RESET, settings)
    assert flagged(report) == NONE
    records = "\n".join(p.read_text() for p in (tmp_path / "r").rglob("*.json*"))
    assert records.count('"repeat_faster_unconfirmed"') == 1  # the stall did meet the rule


@pytest.mark.slow
def test_answers_that_depend_on_ids(mini: Path, tmp_path: Path) -> None:
    settings = AuditSettings(mutation_queries=0, caching_queries=1)
    report = audited(mini, tmp_path / "r", "AnswersById", Persistence.RESET, settings)
    assert flagged(report) == {**NONE, "caching": 2}
    for repeat in report["audit"]["caching"]["flagged"]:
        assert repeat["flags"] == ["answer_depends_on_ids"]
        answers = repeat["answers"]
        assert answers["first"] == "B" and answers["fresh_query_id"] == "C"


@pytest.mark.slow
def test_memory_that_only_the_process_keeps(mini: Path, tmp_path: Path) -> None:
    settings = AuditSettings(mutation_queries=0, persistence_trajectories=2)
    report = audited(mini, tmp_path / "r", "ForgetsOnRestart", Persistence.TRUST, settings)
    assert flagged(report) == {**NONE, "persistence": 2}
    differing = {d["instance_id"]: d for d in report["audit"]["persistence"]["differing"]}
    assert set(differing) == {"T02-PRM-0#pos0", "T02-PRM-0#neg0"}  # registered a session before
    assert differing["T02-PRM-0#pos0"]["run"]["decision"] == "INTERVENE"
    assert differing["T02-PRM-0#pos0"]["restart"]["decision"] == "SILENT"
    assert report["audit"]["caching"]["skipped"][0].startswith("persistence trust")


def test_a_padded_first_chunk(mini: Path, tmp_path: Path) -> None:
    settings = AuditSettings(mutation_queries=0, caching_queries=0, persistence_trajectories=0)
    report = audited(mini, tmp_path / "r", "PadsFirstChunk", Persistence.RESET, settings)
    tokens = report["audit"]["first_token"]
    assert flagged(report) == {**NONE, "first_token": tokens["queries"]}
    assert "only whitespace" in tokens["flagged"][0]["problem"]


def test_a_refused_export_is_recorded_and_the_run_goes_on(mini: Path, tmp_path: Path) -> None:
    settings = AuditSettings(caching_queries=0, persistence_trajectories=0)
    out = tmp_path / "r"
    report = audited(mini, out, "RefusesExportInSession", Persistence.RESET, settings)
    assert flagged(report) == {**NONE, "export_failed": 6}
    failed = report["audit"]["state_mutation"]["export_failed"][0]
    assert "FAILED_PRECONDITION: this system exports only between sessions" in failed["error"]
    assert len(untimed(out / "instances.jsonl")) == 20  # every query was still asked
