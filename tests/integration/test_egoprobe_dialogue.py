"""EgoProbe's two-turn probing through a real server process: R2 follows only a parsed "yes",
carries R1's actual answer, runs on the same branch as R1 and sees no frame after the query."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.egoprobe import prompts
from apmbench.harness.suites.egoprobe.dataset import load_dataset
from apmbench.harness.suites.egoprobe.synth import synthetic_dataset

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_dataset("tiny", 0, tmp_path_factory.mktemp("cache"))


def _run(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    log = tmp_path / "record.jsonl"
    monkeypatch.setenv("APMBENCH_RECORD", str(log))
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=tiny,
            out=out,
            # The recorder writes to a host file, which the sandbox rightly forbids.
            runtime=runtime_spec(system=f"helpers.dialogue_systems:{system}", sandbox=False),
            benchmark="egoprobe",
        )
    )
    events = [json.loads(x) for x in log.read_text().splitlines()]
    rows = [json.loads(x) for x in (out / "instances.jsonl").read_text().splitlines()]
    return events, rows, json.loads((out / "report.json").read_text())


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
def test_r2_follows_a_yes_with_r1_answer_on_the_same_branch(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, rows, report = _run(tiny, tmp_path, monkeypatch, "DialogueRecorder")
    dataset = load_dataset(tiny)
    dialogues = {d.dialogue_id: d for d in dataset.dialogues}
    assert len(dialogues) >= 3  # tiny, generator version 5: 3 Echo questions
    by_id = {r["instance_id"]: r for r in rows}
    yes = no = 0
    for did, d in dialogues.items():
        r1 = by_id[f"{did}:R1"]
        assert r1["follow_up_id"] == f"{did}:R2"
        # Locate R1's query in the server's log by the answer it streamed.
        i = next(k for k, e in enumerate(events) if e.get("answer") == r1["raw_output"])
        first = events[i]
        assert first["question"] == d.r1_question and first["dialogue"] == []
        assert first["time_ms"] == d.parent.time_ms
        assert first["latest_ms"] <= first["time_ms"]  # no frame after the query time
        if r1["answer"] == "A":
            yes += 1
            assert r1["follow_up_asked"] is True
            second = events[i + 1]  # next thing the server saw: R2, no frame in between
            assert second["event"] == "query" and second["question"] == d.r2_question
            # R2 carries R1 as it was asked and the system's actual answer, verbatim.
            assert second["dialogue"] == [
                [prompts.first_round(d.r1_question), d.r1_question, r1["raw_output"]]
            ]
            # ... and quotes it in the prompt too, for systems that read only the prompt.
            assert r1["raw_output"] in second["prompt"]
            assert second["branch"] == first["branch"]
            assert second["time_ms"] == first["time_ms"]
            assert second["latest_ms"] <= second["time_ms"]
            assert by_id[f"{did}:R2"]["raw_output"] == second["answer"]
        else:
            no += 1
            assert r1["follow_up_asked"] is False
            assert f"{did}:R2" not in by_id
            assert not [e for e in events if r1["raw_output"] in str(e.get("dialogue"))]
    assert yes and no, (yes, no)  # both paths ran
    d = report["dialogues"]
    assert d["n"] == len(dialogues) and d["reached_r2"] == yes
    # Every R2 here picked A; a dialogue counts only when both rounds are right.
    both = sum(
        1
        for did, dl in dialogues.items()
        if by_id[f"{did}:R1"]["answer"] == "A" and dl.parent.answer == "A"
    )
    assert d["two_turn_accuracy"] == pytest.approx(100.0 * both / len(dialogues))


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
def test_no_r2_after_a_no(tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events, rows, report = _run(tiny, tmp_path, monkeypatch, "DialogueBlind")
    assert not [r for r in rows if r["round"] == "R2"]
    assert not [e for e in events if e.get("dialogue")]
    assert report["dialogues"]["r1_accuracy"] == 0.0
    assert report["dialogues"]["two_turn_accuracy"] == 0.0
    assert report["dialogues"]["outcomes"]["r1_wrong"] == 100.0
