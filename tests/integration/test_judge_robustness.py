"""A judge is its endpoint, and a judge that is down fails the command (issue 11, item 8).

Real runs of the mini dataset, judged over real HTTP on loopback: the reply
cache must not hand one endpoint's replies to another serving the same model
name, and a configured judge that cannot be reached must not end with exit
status 0 and null numbers unless the user asks for that with --judge-optional.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.chat_server import API_KEY, chat_server

from apmbench.harness.cli import main
from apmbench.harness.commands.judge_options import EXIT_JUDGE_UNREACHABLE

KEY_ENV = "APMBENCH_TEST_JUDGE_KEY"
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"


@pytest.fixture(autouse=True)
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def closed_port_url() -> str:
    """A loopback URL where nothing listens: connections are refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def judge_args(url: str) -> list[str]:
    return [
        "--judge", "openai", "--judge-model", "judge-test", "--judge-base-url", url,
        "--judge-api-key-env", KEY_ENV, "--judge-http-retries", "0", "--judge-timeout", "5",
    ]  # fmt: skip


def evaluate_args(mini: Path, out: Path) -> list[str]:
    return ["evaluate", "--dataset", str(mini), "--system", "null", "--persistence", "reset",
            "--out", str(out)]  # fmt: skip


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("judged") / "run"
    mini = MINI
    with chat_server() as server:
        monkey = pytest.MonkeyPatch()
        monkey.setenv(KEY_ENV, API_KEY)
        monkey.setenv("no_proxy", "127.0.0.1,localhost")
        try:
            result = CliRunner().invoke(main, [*evaluate_args(mini, out), *judge_args(server.url)])
        finally:
            monkey.undo()
        assert result.exit_code == 0, result.output
        assert server.calls == 5
    return out


@pytest.mark.slow
def test_another_endpoint_with_the_same_model_name_is_asked_again(
    judged_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(judged_run, run)
    with chat_server() as other:
        result = CliRunner().invoke(main, ["score", str(run), *judge_args(other.url)])
        assert result.exit_code == 0, result.output
        # Same model name, same prompts, same cache directory: without the
        # endpoint in the key all five replies would come from the first server.
        assert other.calls == 5
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["scoring"]["judge_calls"]["cache_hits"] == 0
    assert manifest["scoring"]["signature"]["judge"]["base_url"] == other.url.rstrip("/")


def test_an_unreachable_judge_fails_evaluate_with_a_clear_message(
    mini: Path, tmp_path: Path
) -> None:
    url = closed_port_url()
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [*evaluate_args(mini, out), *judge_args(url)])
    assert result.exit_code == EXIT_JUDGE_UNREACHABLE, result.output
    assert "could not be reached" in result.output and url in result.output
    assert "--judge-optional" in result.output
    # The run itself is kept, so `score` can finish it once the judge is back.
    report = json.loads((out / "report.json").read_text())
    assert report["overall"]["score"] is None

    kept = tmp_path / "kept"
    result = CliRunner().invoke(
        main, [*evaluate_args(mini, kept), *judge_args(url), "--judge-optional"]
    )
    assert result.exit_code == 0, result.output


def test_an_unreachable_judge_fails_score(judged_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(judged_run, run)
    url = closed_port_url()
    result = CliRunner().invoke(main, ["score", str(run), *judge_args(url)])
    assert result.exit_code == EXIT_JUDGE_UNREACHABLE, result.output
    assert "could not be reached" in result.output
    result = CliRunner().invoke(main, ["score", str(run), *judge_args(url), "--judge-optional"])
    assert result.exit_code == 0, result.output
