"""The judge's inputs and outputs without a model: strict verdicts, requests, cache keys, settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.adapters.sdk.types import Choice
from apmbench.harness.errors import ConfigError, JudgeReplyError
from apmbench.harness.scoring.judge.cache import ReplyCache, cache_key
from apmbench.harness.scoring.judge.config import JudgeConfig, parse_judge_spec
from apmbench.harness.scoring.judge.verdict import parse_verdict
from apmbench.harness.suites.apmbench.dataset import Candidate, Probe
from apmbench.harness.suites.apmbench.rubric import MAX_RESPONSE_CHARS, request_messages

CHECKS = {
    "task_fidelity": "pass",
    "historical_or_registration_grounding": "not_applicable",
    "current_trigger_or_silence_grounding": "partial",
    "factual_support": "pass",
    "usefulness": "pass",
}


def verdict(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "score": 4,
        "criterion_checks": dict(CHECKS),
        "critical_issues": [],
        "justification": "Names the missing plate.",
    }
    base.update(changes)
    return base


def test_a_well_formed_verdict_is_read() -> None:
    v = parse_verdict("  " + json.dumps(verdict()) + "\n")
    assert v.score == 4 and v.criterion_checks == CHECKS and v.critical_issues == []


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "empty reply"),
        ("```json\n" + json.dumps(verdict()) + "\n```", "not exactly one JSON object"),
        ("Here it is: " + json.dumps(verdict()), "not exactly one JSON object"),
        (json.dumps(verdict()) + " Thanks!", "not exactly one JSON object"),
        (json.dumps([verdict()]), "is a JSON list"),
        (json.dumps(verdict(score=0)), "score must be one integer from 1 through 5"),
        (json.dumps(verdict(score=6)), "score must be one integer"),
        (json.dumps(verdict(score=4.5)), "score must be one integer"),
        (json.dumps(verdict(score="4")), "score must be one integer"),
        (json.dumps(verdict(score=True)), "score must be one integer"),
        (json.dumps(verdict(notes="x")), "unexpected notes"),
        (
            json.dumps({k: v for k, v in verdict().items() if k != "justification"}),
            "missing justification",
        ),
        (
            json.dumps(verdict(criterion_checks={**CHECKS, "usefulness": "pass|partial|fail"})),
            "usefulness must be one of",
        ),
        (
            json.dumps(verdict(criterion_checks={**CHECKS, "task_fidelity": "not_applicable"})),
            "task_fidelity must be one of",
        ),
        (
            json.dumps(
                verdict(criterion_checks={k: v for k, v in CHECKS.items() if k != "usefulness"})
            ),
            "missing usefulness",
        ),
        (json.dumps(verdict(critical_issues="none")), "critical_issues must be an array"),
        (json.dumps(verdict(justification="  ")), "justification must be a non-empty string"),
        (
            '{"score": 4, "score": 5, "criterion_checks": {}, "critical_issues": [], "justification": "x"}',
            "duplicated field 'score'",
        ),
    ],
)
def test_anything_else_is_rejected_with_the_reason(reply: str, problem: str) -> None:
    with pytest.raises(JudgeReplyError, match=problem.replace("|", r"\|")):
        parse_verdict(reply)


def rcr_candidate() -> tuple[Candidate, Probe, Probe]:
    raw = {
        "task_type": "RCR",
        "trajectory_id": "T01",
        "candidate_id": "T01-RCR-0",
        "registration_event": {"registration_text": "Remind me to turn off the stove."},
        "positive_heartbeat": {
            "query_time": "12:30:30",
            "proactive_response": "Turn it off.",
            "reason": "plate up",
        },
        "negative_heartbeats": [{"query_time": "12:30:12", "silence_reason": "plate still down"}],
        "ideal_response_window": {"start_time": "12:30:29", "end_time": "12:30:31"},
    }
    pos = Probe("T01-RCR-0#pos", 1, 45_030_000, "p", positive=True, label=raw["positive_heartbeat"])
    neg = Probe(
        "T01-RCR-0#neg0", 1, 45_012_000, "p", positive=False, label=raw["negative_heartbeats"][0]
    )
    candidate = Candidate("T01-RCR-0", "T01", "RCR", "", (), None, (pos, neg), raw=raw)
    return candidate, pos, neg


def test_request_carries_cutoff_references_of_this_probe_only_and_the_response() -> None:
    candidate, _, neg = rcr_candidate()
    system, user = request_messages(
        candidate, neg, {"raw_output": '{"decision":"SILENT","reason":"wait"}'}
    )
    assert system["role"] == "system" and system["content"].endswith(
        "RCR: Check fidelity to the in-session registration and whether the current observable "
        "condition justifies the registered response."
    )
    text = user["content"]
    assert "Causal cutoff: DAY1 12:30:12" in text
    assert "Reference decision at this probe: SILENT" in text
    assert "plate still down" in text and "Remind me to turn off the stove." in text
    assert "plate up" not in text and "Turn it off." not in text  # the other probe's labels
    assert "T01-RCR-0" not in text  # ids tell the judge nothing
    assert text.endswith('{"decision":"SILENT","reason":"wait"}')


def test_era_positive_request_says_the_option_passed_and_long_outputs_are_cut_visibly() -> None:
    choices = tuple(Choice(o, o.lower()) for o in "ABCD")
    pos = Probe("E#pos", 0, 1000, "p", positive=True, label={"response_reason": "opened"})
    raw = {
        "task_type": "ERA",
        "question": "Which?",
        "positive_heartbeat": {},
        "negative_heartbeats": [],
    }
    candidate = Candidate("E", "T", "ERA", "Which?", choices, "A", (pos,), raw=raw)
    long_output = "INTERVENE " * 2000
    _, user = request_messages(candidate, pos, {"raw_output": long_output})
    assert "chose the correct option A" in user["content"]
    assert (
        f"[... {len(long_output) - MAX_RESPONSE_CHARS} more characters cut by the harness]"
        in user["content"]
    )


def test_cache_key_changes_with_model_settings_and_every_byte_of_the_prompt(tmp_path: Path) -> None:
    judge = {"kind": "openai", "model": "m", "temperature": 0, "max_tokens": 64}
    messages = [{"role": "user", "content": "hello"}]
    key = cache_key(judge, messages)
    assert key == cache_key(dict(reversed(judge.items())), messages)
    assert key != cache_key({**judge, "model": "m2"}, messages)
    assert key != cache_key({**judge, "max_tokens": 65}, messages)
    assert key != cache_key(judge, [{"role": "user", "content": "hello "}])
    cache = ReplyCache(tmp_path)
    assert cache.get(key) is None
    cache.put(key, judge, messages, "reply text")
    assert cache.get(key) == "reply text" and (cache.hits, cache.misses) == (1, 1)
    assert not list(tmp_path.rglob("*.tmp"))


def test_judge_specs_and_settings_are_checked_before_any_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert parse_judge_spec("none") == ("none", None)
    assert parse_judge_spec("transformers:/m") == ("transformers", Path("/m"))
    with pytest.raises(ConfigError, match="use none, openai, transformers:PATH or synthetic"):
        parse_judge_spec("gpt")
    with pytest.raises(ConfigError, match="needs --judge-model and --judge-base-url"):
        JudgeConfig(kind="openai").check()
    monkeypatch.delenv("APMBENCH_TEST_KEY", raising=False)
    config = JudgeConfig(
        kind="openai", model="m", base_url="http://127.0.0.1:1/v1", api_key_env="APMBENCH_TEST_KEY"
    )
    with pytest.raises(ConfigError, match=r"\$APMBENCH_TEST_KEY, which is not set"):
        config.check()
    with pytest.raises(ConfigError, match="is not a model directory"):
        JudgeConfig(kind="transformers", path=tmp_path / "missing").check()
    with pytest.raises(ConfigError, match="must be >= 1"):
        JudgeConfig(attempts=0).check()
    recorded = JudgeConfig(kind="openai", model="m", base_url="u", attempts=2)
    assert JudgeConfig.from_dict(recorded.as_dict()) == recorded
    assert "APMBENCH_TEST_KEY" not in json.dumps(JudgeConfig().as_dict())
