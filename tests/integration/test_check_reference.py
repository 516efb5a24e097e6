"""Every reference system passes the whole check suite as a process; the CLI reports it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from apmbench.adapters.systems import REFERENCE_SYSTEMS
from apmbench.harness.check import CHECKS, Outcome, run_suite, select
from apmbench.harness.check.render import failures
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import ProcessRuntime

# What cannot apply to a reference system, and why: each says so instead of passing.
NOT_APPLICABLE = {"misuse-import-undeclared"}  # they all import
KEEPS_FRAMES = {"frame-archive"}  # the only memory that grows past 64 MiB from frames


def check_cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "apmbench.harness.cli", "check", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["null", *REFERENCE_SYSTEMS])
def test_a_reference_system_passes_every_check(name: str, tmp_path: Path) -> None:
    with ProcessRuntime(name, tmp_path / "system.log", Deadlines(), 60) as runtime:
        report = run_suite(runtime, select())
    assert report.ok, "\n".join(failures(report))
    assert [r.name for r in report.results] == [c.name for c in CHECKS]
    skipped = {r.name for r in report.results if r.outcome is Outcome.NOT_APPLICABLE}
    both_encodings = len(report.target["system"]["capabilities"]["frame_encodings"]) == 2  # type: ignore[index]
    expected = set(NOT_APPLICABLE)
    expected |= {"frames-undeclared-encoding"} if both_encodings else set()
    expected |= set() if name in KEEPS_FRAMES else {"state-large-transfer"}
    resumes = report.target["system"]["capabilities"]["resumes_sessions"]  # type: ignore[index]
    expected |= set() if resumes else {"resume-session"}
    assert skipped == expected
    for r in report.results:
        assert r.reason, r.name  # every outcome says what was seen


def test_the_command_prints_a_table_writes_json_and_exits_zero(tmp_path: Path) -> None:
    done = check_cli("--system", "null", "--out", str(tmp_path / "out"), "--quick")
    assert done.returncode == 0, done.stderr
    assert "apmbench-grpc check: null 1:" in done.stdout and "0 failed" in done.stdout
    report = json.loads((tmp_path / "out" / "check.json").read_text())
    assert report["ok"] is True and report["format"] == "apmbench-check"
    names = [c["name"] for c in report["checks"]]
    assert "persistence-restart" not in names and "query-read-only" in names  # --quick
    # One start, plus the fresh process resume-session imports into (null declares R14).
    starts = 1 + ("resume-session" in names)
    assert (tmp_path / "out" / "logs" / "system.log").read_text().count("--- start") == starts


def test_check_takes_the_start_path_a_run_will_use(tmp_path: Path) -> None:
    done = check_cli("--system", "null", "--start", "template", "--out", str(tmp_path / "t"))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "t" / "check.json").read_text())
    assert report["ok"] is True and report["target"]["runtime"]["start"] == "template"
    assert "persistence-restart" in [c["name"] for c in report["checks"]]  # restarts forked
    assert (tmp_path / "t" / "logs" / "template.log").exists()
    refused = check_cli("--command", "x {address}", "--start", "template")
    assert refused.returncode == 2 and "only for --system" in refused.stderr


@pytest.mark.usefixtures("helper_env")
def test_a_failing_check_exits_one_and_names_its_rule(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = check_cli(
        "--system", "helpers.broken_systems:MutatesInQuery", "--out", str(out),
        "--only", "query-read-only", "--json", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "FAIL query-read-only: breaks R5 Query is read-only" in done.stdout
    assert "it must not change what later calls see" in done.stdout
    checks = json.loads((tmp_path / "r.json").read_text())["checks"]
    # describe-version runs first whatever --only says: the others need its answer.
    assert [(c["name"], c["outcome"]) for c in checks] == [
        ("describe-version", "pass"),
        ("query-read-only", "fail"),
    ]
    assert checks[1]["rule"] == "R5" and checks[1]["hint"]


def test_unknown_check_names_are_a_usage_error() -> None:
    done = check_cli("--system", "null", "--only", "no-such-check")
    assert done.returncode == 2
    assert "unknown check no-such-check: the checks are health, reflection" in done.stderr


def test_a_server_that_does_not_start_fails_with_its_own_words(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = check_cli("--system", "no_such_module:Nothing", "--out", str(out), "--json", "-")
    assert done.returncode == 1
    checks = json.loads(done.stdout)["checks"]
    assert (checks[0]["name"], checks[0]["outcome"]) == ("start", "fail")
    assert "cannot import 'no_such_module'" in checks[0]["reason"]  # the server's own output
    assert {c["outcome"] for c in checks[1:]} == {"n/a"} and len(checks) == len(CHECKS) + 1
