"""`evaluate` with no system: every compared system in turn on one resolved dataset. One
that fails is reported, the others still run and are compared, and the command exits
with the failure's code."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.commands import evaluate as evaluate_command
from apmbench.harness.commands.common import EXIT_SYSTEM
from apmbench.harness.commands.judge_options import EXIT_JUDGE_UNREACHABLE

MINI = Path(__file__).parents[1] / "fixtures" / "mini"
KEY_ENV = "APMBENCH_TEST_COMPARISON_KEY"


@pytest.mark.usefixtures("helper_env")
def test_a_failing_system_leaves_the_others_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    systems = ["null", "helpers.faulty:Faulty", "text-only"]
    monkeypatch.setattr(evaluate_command, "compared_systems", lambda *_, **__: systems)
    out = tmp_path / "runs"
    done = CliRunner().invoke(
        main,
        ["evaluate", "--dataset", str(MINI), "--persistence", "reset", "--out", str(out),
         "--env", "APMBENCH_FAULT=crash:query:1"],
    )  # fmt: skip
    text = " ".join(done.output.split())
    assert done.exit_code == EXIT_SYSTEM, done.output
    assert "not every system finished: helpers.faulty:Faulty (exit 3)" in text
    for finished in ("null", "text-only"):
        assert (out / finished / "report.json").is_file(), finished
    failed = out / "helpers.faulty_Faulty"
    assert failed.is_dir() and not (failed / "report.json").exists()
    assert (out / "compare.html").is_file()


def test_runs_whose_judge_was_unreachable_are_still_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both runs finished and wrote their reports, without the judge's numbers: they are in
    the table and the page, and the command exits 4 as a single such run does."""
    monkeypatch.setattr(
        evaluate_command, "compared_systems", lambda *_, **__: ["null", "text-only"]
    )
    monkeypatch.setenv(KEY_ENV, "key")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with socket.socket() as s:  # a loopback port where nothing listens
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    out = tmp_path / "runs"
    done = CliRunner().invoke(
        main,
        ["evaluate", "--dataset", str(MINI), "--persistence", "reset", "--out", str(out),
         "--judge", "openai", "--judge-model", "m", "--judge-base-url", url,
         "--judge-api-key-env", KEY_ENV, "--judge-http-retries", "0", "--judge-timeout", "5"],
    )  # fmt: skip
    assert done.exit_code == EXIT_JUDGE_UNREACHABLE, done.output
    assert "could not be reached" in done.output
    for system in ("null", "text-only"):
        assert (out / system / "report.json").is_file(), system
    page = (out / "compare.html").read_text()
    assert "null" in page and "text-only" in page


@pytest.mark.slow
def test_a_suite_is_compared_on_the_systems_that_answer_it(tmp_path: Path) -> None:
    """ProactEgoMem's comparison runs its own reference system, not the four that answer
    only APM-Bench and EgoProbe (each named with that reason)."""
    out = tmp_path / "runs"
    done = CliRunner().invoke(
        main,
        ["evaluate", "--benchmark", "proactegomem", "--synthetic", "tiny", "--seed", "0",
         "--out", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["proact-rules"]
    text = " ".join(done.output.split())
    assert "system=text-log why='it answers only apmbench, egoprobe, not proactegomem'" in text
