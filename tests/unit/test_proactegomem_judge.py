"""The matcher's similarity from a judge, through the project's judging pass (cache, bounded
retry): a synonym the deterministic word match misses is matched once the judge says so,
and a reply that is not one number in [0, 1] is retried, then recorded as unjudged."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.errors import JudgeReplyError
from apmbench.harness.orchestrate.scoring import judge_instances
from apmbench.harness.scoring.judge.config import JudgeConfig
from apmbench.harness.suites import get_suite
from apmbench.harness.suites.proactegomem import prompts
from apmbench.harness.suites.proactegomem.judging import read_similarity

SYNONYMS = {("tap", "faucet")}


class SynonymJudge:
    """A deterministic chat backend: 1.0 for the same object (synonyms included), else 0.0;
    its first reply to each request is prose, which the reader must refuse."""

    def __init__(self, broken: bool = False) -> None:
        self.cache_identity: dict[str, Any] = {"model": "synonym-judge", "broken": broken}
        self.identity = dict(self.cache_identity)
        self.max_concurrency = 1
        self.calls = 0
        self.broken = broken
        self.seen: list[str] = []

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        self.calls += 1
        if len(messages) == 1:
            self.seen.append(messages[0]["content"])
            return "I think they are the same: 1.0"
        if self.broken:
            return "2.5"
        content = messages[0]["content"]
        m = re.search(
            r'Reference \(ground truth\): "(.*)" Candidate \(model output\): "(.*)"', content
        )
        assert m
        ref, cand = m.group(1).lower(), m.group(2).lower()
        obj = ref.split()[-1]
        same = obj in cand or any(obj == a and b in cand for a, b in SYNONYMS)
        return "1.0" if same else "0.0"

    def close(self) -> None:
        pass


def rows(level: str) -> list[dict[str, Any]]:
    truth = json.dumps([{"event_id": "e", "object": "tap", "start_s": 2.0, "end_s": 6.0}])
    out = []
    for k in range(10):
        if level == "intervention":
            calls: list[dict[str, Any]] = []
            if k == 2:
                calls = [{"name": "start_state_tracking",
                          "arguments": {"name": "faucet", "state": "running"}}]  # fmt: skip
            if k == 6:
                calls = [{"name": "stop_state_tracking", "arguments": {"id": "st-1"}}]
            raw = json.dumps({"message": "why" if calls else None, "tool_calls": calls})
        else:
            raw = json.dumps({"message": "You just opened the faucet." if k == 2 else None})
        out.append(
            {"instance_id": f"c:{level}:{k}", "role": "step", "level": level, "task": "ST",
             "trajectory_id": "c", "step_index": k, "time_ms": 1000 * k, "clip_end_s": 10.0,
             "ground_truth": truth, "raw_output": raw, "ttft_s": 0.01, "total_s": 0.01,
             "rtf": None}
        )  # fmt: skip
    return out


def score(instances: list[dict[str, Any]]) -> dict[str, Any]:
    report: dict[str, Any] = get_suite("proactegomem").report_format().score(instances, [], {})
    return report


@pytest.mark.parametrize("level", ["intervention", "notification"])
def test_the_judge_matches_a_synonym_word_match_misses(tmp_path: Path, level: str) -> None:
    instances = rows(level)
    synthetic = [{**r, "synthetic": True} for r in instances]
    assert score(synthetic)["levels"][level]["matched"] == 0  # word match: "faucet" != "tap"
    backend = SynonymJudge()
    calls = judge_instances(instances, get_suite("proactegomem"), None,  # type: ignore[arg-type]
                            JudgeConfig(kind="openai"), backend, tmp_path)  # fmt: skip
    # Each request: refused prose, then a number. Intervention: the name, and the message
    # that closed the tracker ("why": names no object, no outcome).
    n = 2 if level == "intervention" else 1
    assert calls["requests"] == n and backend.calls == 2 * n
    report = score(instances)
    cell = report["levels"][level]
    assert cell["matched"] == 1 and cell["start_at"]["0.2"] == 100.0
    assert (
        report["similarity"].startswith("LLM judge") and "0 pairs unjudged" in report["similarity"]
    )
    if level == "intervention":
        asked, closing = backend.seen
        assert asked.startswith(prompts.JUDGE_INTERVENTION) and '"tap"' in asked
        assert closing.startswith(prompts.JUDGE_CLOSING) and '"why"' in closing
        assert cell["closing_message"] == {"matched": 1, "correct": 0, "share": 0.0}
    else:
        [asked] = backend.seen
        assert asked.startswith(prompts.JUDGE_NOTIFICATION)
        assert '"You just turned on / opened tap"' in asked


def test_an_unusable_judge_leaves_the_pair_unjudged_and_unmatched(tmp_path: Path) -> None:
    instances = rows("intervention")
    judge_instances(instances, get_suite("proactegomem"), None,  # type: ignore[arg-type]
                    JudgeConfig(kind="openai", attempts=2), SynonymJudge(broken=True), tmp_path)  # fmt: skip
    report = score(instances)
    assert report["levels"]["intervention"]["matched"] == 0
    assert "1 pairs unjudged" in report["similarity"]


@pytest.mark.parametrize("reply", ["", "yes", "1.5", "-0.1", "nan", "0.9 because"])
def test_the_reader_takes_one_number_in_the_unit_interval(reply: str) -> None:
    with pytest.raises(JudgeReplyError):
        read_similarity(reply)
    assert read_similarity(" 0.75\n") == {"similarity": 0.75}


@pytest.mark.parametrize("level", ["intervention", "notification"])
def test_real_data_without_a_judge_scores_nothing_judged(level: str) -> None:
    """No judge on a dataset that is not the synthetic suite: every number the matching
    decides is n/c with the reason, as APM-Bench does; counts and QA stay. The word match
    used to stand in silently, labelled "synthetic suite"."""
    from apmbench.harness.suites.proactegomem import report as render

    instances = [{**r, "ground_truth": r["ground_truth"].replace("tap", "faucet")}
                 for r in rows(level)]  # fmt: skip
    on_synthetic = score([{**r, "synthetic": True} for r in instances])
    assert on_synthetic["levels"][level]["matched"] == 1  # the word match would score it
    assert on_synthetic["similarity"].startswith("synthetic reference judge")
    report = score(instances)
    cell = report["levels"][level]
    assert report["similarity"].startswith("not computed: no judge configured")
    for key in ("matched", "start_at", "precision", "recall", "f1", "late_share"):
        assert cell[key] is None, key
    assert cell["by_task"]["ST"]["f1"] is None and cell["clips"]["c"]["recall"] is None
    assert cell["predictions"] == 1 and cell["ground_truth"] == 1 and cell["steps"] == 10
    text = render.render_markdown(report, {"system": {"name": "x"}})
    assert (
        "not computed: no judge configured" in text
        and f"| {level} · IC, ST, LT pooled (the project's) | n/c |" in text
    )
    assert "Per-step view: streamed:" in text
    # A configured judge that was asked nothing (no pair in the window) is still a judge.
    judged = (
        get_suite("proactegomem")
        .report_format()
        .score(instances, [], {"judge": {"kind": "openai"}})
    )
    assert judged["similarity"].startswith("LLM judge")
    assert judged["levels"][level]["matched"] == 0  # asked nothing: no word match instead


def test_the_closing_message_judge_reads_the_stopping_step(tmp_path: Path) -> None:
    """Section 5.6: the message of the step that stopped a matched tracker, judged against
    the task's outcome; without a judge it is n/c even on the synthetic suite."""
    instances = rows("intervention")
    closing = "I decided to stop tracking because the faucet was turned off."
    for r in instances:
        if r["step_index"] == 6:
            r["raw_output"] = json.dumps({"message": closing, "tool_calls": [
                {"name": "stop_state_tracking", "arguments": {"id": "st-1"}}]})  # fmt: skip
    assert score([{**r, "synthetic": True} for r in instances])["levels"]["intervention"][
        "closing_message"] is None  # fmt: skip
    backend = SynonymJudge()
    judge_instances(instances, get_suite("proactegomem"), None,  # type: ignore[arg-type]
                    JudgeConfig(kind="openai"), backend, tmp_path)  # fmt: skip
    assert closing in backend.seen[1]
    cell = score(instances)["levels"]["intervention"]
    assert cell["closing_message"] == {"matched": 1, "correct": 1, "share": 100.0}
    assert cell["by_task"]["ST"]["closing_message"]["correct"] == 1
