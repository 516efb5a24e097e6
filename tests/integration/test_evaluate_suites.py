"""`evaluate --benchmark all` (or a comma list): one system on each suite in turn, each into
OUT/<suite> as an ordinary run directory, then one page across the suites; what cannot
apply to every suite is refused with exit 2 before anything starts; a suite that fails
leaves the others' runs and the exit code says so; --resume continues suite by suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from apmbench.harness.commands.common import EXIT_SYSTEM, EXIT_USAGE
from apmbench.harness.commands.evaluate_suites import worst_exit
from apmbench.harness.commands.judge_options import EXIT_JUDGE_UNREACHABLE
from apmbench.harness.run.manifest import load as load_manifest
from apmbench.harness.suites import BUILTIN, get_suite

CLI = [sys.executable, "-m", "apmbench.harness.cli", "evaluate"]
TITLES = {name: get_suite(name).title for name in BUILTIN}


def evaluate(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--benchmark", "apmbench,egoprob", "--system", "null"], "egoprob"),
        (["--benchmark", "egoprobe,apmbench,egoprobe", "--system", "null"], "more than once"),
        (["--benchmark", "apmbench,,egoprobe", "--system", "null"], "empty name"),
        (["--benchmark", "all,egoprobe", "--system", "null"], "stands alone"),
        (["--benchmark", "all", "--dataset", "tests/fixtures/mini", "--system", "null"],
         "--synthetic"),
        (["--benchmark", "all", "--synthetic", "tiny"], "one system on each suite"),
        (["--benchmark", "all", "--synthetic", "tiny", "--system", "null", "--fps", "2"],
         "--fps does not suit proactegomem"),
        (["--benchmark", "apmbench,egoprobe", "--synthetic", "tiny", "--system", "null",
          "--shard", "0/2"], "--shard"),
        (["--benchmark", "all", "--synthetic", "huge", "--system", "null"],
         "--synthetic does not suit apmbench"),
        (["--benchmark", "all", "--synthetic", "tiny", "--system", "no-such-system"],
         "no-such-system"),
    ],
)  # fmt: skip
def test_what_cannot_apply_to_every_suite_is_refused_before_anything_starts(
    tmp_path: Path, args: list[str], said: str
) -> None:
    out = tmp_path / "out"
    done = evaluate(*args, "--out", str(out), timeout=60)
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    assert said in " ".join(done.stderr.split()), done.stderr
    assert not out.exists()


def test_a_suite_holding_a_run_is_refused_without_resume_before_any_suite_runs(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    (out / "proactegomem").mkdir(parents=True)
    (out / "proactegomem" / "manifest.json").write_text("{}")
    done = evaluate(
        "--benchmark", "all", "--synthetic", "tiny", "--system", "null", "--out", str(out),
        timeout=60,
    )  # fmt: skip
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "already holds a run" in done.stderr and "--resume" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["proactegomem"]


def test_the_worst_suite_decides_the_exit_code() -> None:
    assert worst_exit([0, 0, 0]) == 0
    assert worst_exit([0, EXIT_JUDGE_UNREACHABLE, 0]) == EXIT_JUDGE_UNREACHABLE
    # A suite without a report outranks one whose report lacks only the judge's numbers.
    assert worst_exit([EXIT_JUDGE_UNREACHABLE, EXIT_USAGE]) == EXIT_USAGE
    assert worst_exit([EXIT_USAGE, EXIT_SYSTEM, EXIT_JUDGE_UNREACHABLE]) == EXIT_SYSTEM
    assert worst_exit([EXIT_SYSTEM, 130]) == 130


@pytest.mark.slow
def test_all_runs_every_suite_into_its_own_run_directory_and_one_page(tmp_path: Path) -> None:
    out = tmp_path / "all"
    done = evaluate(
        "--benchmark", "all", "--synthetic", "tiny", "--seed", "0", "--system", "null",
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    page = (out / "report.md").read_text()
    html = (out / "compare.html").read_text()
    data = json.loads((out / "suites.json").read_text())
    assert [s["name"] for s in data["suites"]] == list(BUILTIN)
    for name in BUILTIN:
        run = out / name
        manifest = load_manifest(run / "manifest.json")
        assert manifest.benchmark == name and manifest.system_name == "null"
        assert manifest.synthetic is not None and manifest.synthetic.seed == 0
        report = json.loads((run / "report.json").read_text())
        headline = get_suite(name).report_format().headline(report)
        # The page's row is this suite's own headline, read from its own report.
        row = next(line for line in page.splitlines() if line.startswith(f"| {TITLES[name]} |"))
        assert f"| done | {headline.utility_label} |" in row and f"| {name} |" in row
        assert f'<a href="{name}/report.html">{name}</a>' in html
        (entry,) = (s for s in data["suites"] if s["name"] == name)
        assert entry["exit_code"] == 0 and entry["headline"]["utility"] == headline.utility
    assert "null on 3 suites" in page and "null on 3 suites" in html
    assert f"comparison: {out / 'compare.html'}" in done.stdout
    # Each suite's directory is an ordinary run directory: `compare` takes it as it is.
    compared = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "compare", str(out / "egoprobe"),
         "--out", str(tmp_path / "cmp")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    assert (tmp_path / "cmp" / "compare.md").is_file()


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
def test_a_failed_suite_keeps_the_others_and_resume_continues_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "two"
    args = (
        "--benchmark", "egoprobe,proactegomem", "--synthetic", "tiny", "--seed", "0",
        "--system", "helpers.suite_failing:FailsOnPrefix", "--env", "APMBENCH_FAIL_PREFIX",
        "--out", str(out),
    )  # fmt: skip
    monkeypatch.setenv("APMBENCH_FAIL_PREFIX", "pem-")  # ProactEgoMem's trajectories only
    failed = evaluate(*args)
    assert failed.returncode == EXIT_SYSTEM, failed.stderr[-3000:]
    assert "not every suite finished: proactegomem (exit 3)" in " ".join(failed.stderr.split())
    assert (out / "egoprobe" / "report.json").is_file()
    assert not (out / "proactegomem" / "report.json").exists()
    rows = (out / "report.md").read_text()
    assert "| EgoProbe | done |" in rows and "| ProactEgoMem | exit 3 | - |" in rows
    kept = {p.name: p.read_bytes() for p in (out / "egoprobe" / "trajectories").iterdir()}
    assert kept

    monkeypatch.setenv("APMBENCH_FAIL_PREFIX", "")
    resumed = evaluate(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    # EgoProbe was finished: resumed with nothing to run, its records as they were.
    again = {p.name: p.read_bytes() for p in (out / "egoprobe" / "trajectories").iterdir()}
    assert again == kept
    assert (out / "proactegomem" / "report.json").is_file()
    rows = (out / "report.md").read_text()
    assert "| EgoProbe | done |" in rows and "| ProactEgoMem | done |" in rows
