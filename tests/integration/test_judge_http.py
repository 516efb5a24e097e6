"""The gated judge end to end against a real OpenAI-compatible HTTP server on loopback.

Runs of the mini dataset with real system processes, judged through real HTTP:
the scores a well-behaved judge gives, malformed replies, timeouts, retryable
and fatal HTTP errors, and the cache that makes re-scoring free.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers.chat_server import API_KEY, ChatServer, Reply, chat_server, is_retry, verdict
from helpers.runs import mini_runs

from apmbench.harness.cli import main
from apmbench.harness.orchestrate.scoring import score_run
from apmbench.harness.run import records
from apmbench.harness.scoring.judge import JudgeConfig, open_judge
from apmbench.harness.suites.apmbench.dataset import load_dataset
from apmbench.harness.suites.apmbench.suite import APMBench

pytestmark = pytest.mark.usefixtures("helper_env")
KEY_ENV = "APMBENCH_TEST_JUDGE_KEY"
ADAPTIVE = ("ERA", "RCR", "MPA", "PRM", "TPG")


@pytest.fixture(autouse=True)
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    # A proxy set in the environment must not intercept loopback calls.
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as s:
        yield s


def config(server: ChatServer, **changes: Any) -> JudgeConfig:
    settings: dict[str, Any] = {
        "kind": "openai",
        "model": "judge-test",
        "base_url": server.url,
        "api_key_env": KEY_ENV,
        "timeout_s": 5.0,
        "backoff_s": 0.0,
        "http_retries": 1,
    }
    settings.update(changes)
    return JudgeConfig(**settings)


@pytest.fixture(scope="module")
def unjudged_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One run of each test system, scored without a judge; tests score copies of them."""
    return mini_runs(tmp_path_factory.mktemp("runs"))


def copy_run(runs: dict[str, Path], name: str, tmp_path: Path) -> records.RunDir:
    shutil.copytree(runs[name], tmp_path / name)
    return records.RunDir(tmp_path / name)


def rescore(run: records.RunDir, judge: JudgeConfig, mini: Path) -> dict[str, Any]:
    return score_run(run, APMBench(), load_dataset(mini), judge, open_judge(judge))


def instances(run: records.RunDir) -> dict[str, dict[str, Any]]:
    rows = [json.loads(x) for x in (run.root / "instances.jsonl").read_text().splitlines()]
    return {r["instance_id"]: r for r in rows}


def test_evaluate_with_an_http_judge_then_rescore_from_the_cache(
    server: ChatServer, mini: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    cli = CliRunner()
    result = cli.invoke(
        main,
        [
            "evaluate", "--dataset", str(mini), "--system", "null", "--persistence", "reset",
            "--out", str(out), "--judge", "openai", "--judge-model", "judge-test",
            "--judge-base-url", server.url, "--judge-api-key-env", KEY_ENV,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    # null is SILENT everywhere: positive probes fail the gate (g = 0), negative
    # probes pass and the judge gives 3, so every candidate scores (0 + 3) / 2.
    for task in ADAPTIVE:
        assert report["tasks"][task]["score"] == pytest.approx(30.0), task
        assert report["response_quality"]["tasks"][task]["score"] == pytest.approx(60.0)
    assert report["families"]["adaptive_response"]["score"] == pytest.approx(30.0)
    # ER 0, EST 0, TR 100 | ACR 0, CT 0, OCR 100, STU 0 (null answers A).
    assert report["overall"]["score"] == pytest.approx((100 / 3 + 25 + 30) / 3)
    assert report["judge"]["by_status"] == {"not_needed": 5, "scored": 5}
    assert server.calls == 5
    assert all(r["temperature"] == 0 and r["model"] == "judge-test" for r in server.requests)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["scoring"]["judge"]["model"] == "judge-test"
    assert manifest["scoring"]["judge_settings"]["api_key_env"] == KEY_ENV
    assert API_KEY not in (out / "manifest.json").read_text()
    assert manifest["scoring"]["judge_calls"] == {"requests": 5, "model_calls": 5, "cache_hits": 0}
    assert "| null | 0.00 | 0.00 | 100.00 |" in (out / "report.md").read_text()

    # Re-scoring reuses the recorded judge and its cache: no call, the same report.
    result = cli.invoke(main, ["score", str(out)])
    assert result.exit_code == 0, result.output
    assert server.calls == 5
    assert json.loads((out / "report.json").read_text()) == report
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["scoring"]["judge_calls"] == {"requests": 5, "model_calls": 0, "cache_hits": 5}


def test_positive_probes_that_pass_the_gate_are_judged(
    server: ChatServer, unjudged_runs: dict[str, Path], mini: Path, tmp_path: Path
) -> None:
    run = copy_run(unjudged_runs, "intervene", tmp_path)
    report = rescore(run, config(server), mini)
    # INTERVENE with option A (ERA's correct option): positives pass (judge 5), negatives fail.
    for task in ADAPTIVE:
        assert report["tasks"][task]["score"] == pytest.approx(50.0), task
    era = instances(run)["T01-ERA-0#pos"]
    assert era["gate_passed"] and era["judge"]["verdict"]["score"] == 5
    sent = next(r for r in server.requests if "Task: ERA" in r["messages"][1]["content"])
    assert "chose the correct option A" in sent["messages"][1]["content"]
    assert "ERA: Check whether the reason" in sent["messages"][0]["content"]


def test_a_malformed_reply_is_retried_with_the_problem_then_scored(
    server: ChatServer, unjudged_runs: dict[str, Path], mini: Path, tmp_path: Path
) -> None:
    server.policy = lambda req, n: (
        Reply(verdict(4)) if is_retry(req) else Reply("```json\n" + verdict(4) + "\n```")
    )
    run = copy_run(unjudged_runs, "null", tmp_path)
    report = rescore(run, config(server), mini)
    assert report["tasks"]["RCR"]["score"] == pytest.approx(40.0)  # (0 + 4) / 2 x 20
    row = instances(run)["T01-RCR-0#neg0"]
    assert row["judge"]["status"] == "scored" and row["judge"]["attempts"] == 2
    assert "not exactly one JSON object" in row["judge"]["problems"][0]
    retry = next(r for r in server.requests if is_retry(r))
    assert retry["messages"][2] == {
        "role": "assistant",
        "content": "```json\n" + verdict(4) + "\n```",
    }
    assert (
        "Your reply could not be used: not exactly one JSON object"
        in retry["messages"][3]["content"]
    )
    assert server.calls == 10
    rescore(run, config(server), mini)
    assert server.calls == 10  # both attempts of every probe came from the cache


def test_a_judge_that_never_follows_the_format_is_recorded_not_defaulted(
    server: ChatServer, unjudged_runs: dict[str, Path], mini: Path, tmp_path: Path
) -> None:
    server.policy = lambda req, n: Reply('{"score": 7, "justification": "great"}')
    run = copy_run(unjudged_runs, "null", tmp_path)
    report = rescore(run, config(server, attempts=2), mini)
    assert server.calls == 10  # 5 probes x 2 attempts, no more
    for task in ADAPTIVE:
        assert report["tasks"][task]["score"] is None
        assert (
            "no usable verdict for 1 of 1 gate-passing probes (invalid: 1)"
            in report["tasks"][task]["reason"]
        )
    assert report["overall"]["score"] is None
    row = instances(run)["T01-MPA-0#neg0"]
    assert row["judge"]["status"] == "invalid" and row["judge_score"] is None
    assert (
        len(row["judge"]["problems"]) == 2
        and "missing criterion_checks" in row["judge"]["problems"][0]
    )
    assert "| null |" in (run.root / "report.md").read_text()


def test_timeouts_are_retried_then_recorded_and_never_cached(
    server: ChatServer, unjudged_runs: dict[str, Path], mini: Path, tmp_path: Path
) -> None:
    server.policy = lambda req, n: Reply(verdict(4), delay_s=1.0)
    run = copy_run(unjudged_runs, "null", tmp_path)
    report = rescore(run, config(server, timeout_s=0.2, http_retries=1), mini)
    assert server.calls == 10  # every probe: the call and one retry
    row = instances(run)["T01-TPG-0#neg0"]
    assert row["judge"]["status"] == "error"
    assert "failed 2 times; last: no reply within 0.2 s" in row["judge"]["problems"][0]
    assert (
        report["tasks"]["TPG"]["score"] is None and "error: 1" in report["tasks"]["TPG"]["reason"]
    )
    # The judge is back: the failures were not cached, so a re-score judges them.
    server.policy = lambda req, n: Reply(verdict(4))
    report = rescore(run, config(server), mini)
    assert report["tasks"]["TPG"]["score"] == pytest.approx(40.0)


def test_retryable_http_errors_back_off_and_succeed(
    server: ChatServer, unjudged_runs: dict[str, Path], mini: Path, tmp_path: Path
) -> None:
    server.policy = lambda req, n: Reply(status=503) if n % 2 else Reply(verdict(2))
    run = copy_run(unjudged_runs, "null", tmp_path)
    report = rescore(run, config(server, concurrency=1), mini)
    assert server.calls == 10
    assert report["tasks"]["PRM"]["score"] == pytest.approx(20.0)


def test_a_fatal_http_error_stops_the_pass_at_once(
    server: ChatServer,
    unjudged_runs: dict[str, Path],
    mini: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    run = copy_run(unjudged_runs, "null", tmp_path)
    report = rescore(run, config(server, concurrency=1), mini)
    rows = [r for r in instances(run).values() if (r.get("judge") or {}).get("status") == "error"]
    assert len(rows) == 5
    assert server.posts == 1  # the rest were never sent
    problems = [r["judge"]["problems"][0] for r in rows]
    assert all("HTTP 401 (check the API key)" in p for p in problems)
    assert sum(p.startswith("not judged: judge endpoint") for p in problems) == 4
    assert report["overall"]["score"] is None


def test_a_broken_endpoint_is_named(
    server: ChatServer, unjudged_runs: dict[str, Path], mini: Path, tmp_path: Path
) -> None:
    server.policy = lambda req, n: Reply(raw_body=b'{"result": "ok"}')
    run = copy_run(unjudged_runs, "null", tmp_path)
    rescore(run, config(server, concurrency=1), mini)
    row = instances(run)["T01-RCR-0#neg0"]
    assert "not an OpenAI chat-completions response" in row["judge"]["problems"][0]


def test_another_judge_model_is_another_cache_entry(
    server: ChatServer, unjudged_runs: dict[str, Path], mini: Path, tmp_path: Path
) -> None:
    run = copy_run(unjudged_runs, "null", tmp_path)
    rescore(run, config(server), mini)
    rescore(run, config(server, model="judge-test-2"), mini)
    assert server.calls == 10
    assert {r["model"] for r in server.requests} == {"judge-test", "judge-test-2"}
    report = json.loads((run.root / "report.json").read_text())
    assert report["scoring"]["signature"]["judge"]["model"] == "judge-test-2"
