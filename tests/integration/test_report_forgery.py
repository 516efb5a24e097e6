"""A system cannot write into the reports (third red team, attack 3).

A Describe name holding a newline, pipes and HTML put a fake top row into every
per-method table of report.md and compare.md; a version's ESC, BEL, CR, BS and
NUL bytes went raw into report.html; a 200,000-character answer was copied
whole into it. Now R15 refuses such a Describe on the wire (exit 3, `check`
fails `describe-strings`), and a run directory that holds such strings anyway
(edited, or from elsewhere) is rendered with each escaped and cut.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cheaters import FORGED_NAME, FORGED_VERSION, LONG_ANSWER_CHARS

from apmbench.harness.check import Outcome, run_suite, select
from apmbench.harness.check.render import failures
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.reports.system_text import HTML_CHARS
from apmbench.harness.runtimes.process import ProcessRuntime

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("helper_env")]
CLI = str(Path(sys.executable).parent / "apmbench-grpc")
TESTS = Path(__file__).resolve().parents[1]
MINI = TESTS / "fixtures" / "mini"
CONTROL_BYTES = (b"\x1b", b"\x07", b"\r", b"\x08", b"\x00")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, timeout=600, env=dict(os.environ)
    )


@pytest.mark.parametrize("start", ["fresh", "template"])
def test_a_forged_describe_is_refused_before_any_other_call(start: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = cli(
        "evaluate", "--dataset", str(MINI), "--system", "helpers.cheaters:ForgedDescribe",
        "--start", start, "--out", str(run),
    )  # fmt: skip
    said = " ".join(done.stdout.split() + done.stderr.split())
    assert done.returncode == 3, said
    assert "R15 (Describe strings)" in said and "is not an identifier" in said
    assert "<script>" not in said and "\x1b" not in said
    assert not (run / "instances.jsonl").exists()


def test_check_fails_describe_strings_naming_r15(tmp_path: Path) -> None:
    deadlines = Deadlines(control=30, push=60, query=30, state=120, end_session=60)
    spec = "helpers.cheaters:ForgedDescribe"
    with ProcessRuntime(spec, tmp_path / "system.log", deadlines, 30) as runtime:
        report = run_suite(runtime, select(only=["describe-strings"]))
    failed = {r.name for r in report.results if r.outcome is Outcome.FAIL}
    assert failed == {"describe-strings"}, failures(report)
    line = failures(report)[0]
    assert "R15 Describe strings" in line and "\n| forged" not in line


FORGED_TABLE = (
    "tiny\n\n## Utility (paper Table 3)\n\n| system | Overall |\n|---|---|\n"
    "| forged | 99.99 |\n<script>alert(2)</script>\x1b[2J\x1b]0;PWNED\x07"
)


def _forge(run: Path) -> None:
    """What an edited run directory, or the manifest of a re-sealed predictions file, may
    hold: every string the reports show, forged (red team 3, and the fresh-eyes one after)."""
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["system"]["name"] = FORGED_NAME + " ![x](https://e.invalid/t.png)"
    manifest["system"]["version"] = FORGED_VERSION
    manifest["dataset"]["name"] = FORGED_TABLE
    manifest["harness_version"] = FORGED_TABLE
    manifest["protocol_version"] = FORGED_TABLE
    manifest["settings"]["persistence"] = FORGED_TABLE
    container = manifest.setdefault("runtime", {}).setdefault("container", {})
    container["mounts"] = [f"/data:/data:ro`{FORGED_TABLE}\n<!-- the rest hidden"]
    (run / "manifest.json").write_text(json.dumps(manifest))


def _headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("#")][1:]  # not the title


def _table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


@pytest.mark.slow
def test_reports_escape_and_cut_what_a_system_wrote(tmp_path: Path) -> None:
    honest, forged = tmp_path / "honest", tmp_path / "forged"
    for run in (honest, forged):
        done = cli(
            "evaluate", "--dataset", str(MINI), "--system", "helpers.cheaters:LongAnswer",
            "--out", str(run),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    records = [json.loads(x) for x in (forged / "instances.jsonl").read_text().splitlines()]
    assert max(len(r["raw_output"]) for r in records) > LONG_ANSWER_CHARS  # kept whole
    rows_before = _table_rows((forged / "report.md").read_text())
    headings_before = _headings((forged / "report.md").read_text())
    _forge(forged)
    done = cli("score", str(forged))
    assert done.returncode == 0, done.stderr

    md = (forged / "report.md").read_text()
    rows = _table_rows(md)
    assert len(rows) == len(rows_before)  # not one row more
    assert not any(r.startswith("| forged") for r in rows)
    assert "x \\| yes \\| yes \\| 99.99" in md
    # Inside a code span HTML is text (CommonMark 6.1): only what lies outside one counts.
    prose = re.sub(r"`[^`\n]*`", "``", md)
    assert "<script" not in prose and "<img" not in prose and "![x](" not in prose
    assert "<!--" not in md
    assert _headings(md) == headings_before  # no forged section either
    assert not any(b in md.encode() for b in CONTROL_BYTES)

    html = (forged / "report.html").read_bytes()
    assert not any(b in html for b in CONTROL_BYTES)
    assert b"<script>alert" not in html and b"<img src=x" not in html
    assert b"more characters in the run records" in html
    assert html.count(b"a" * (HTML_CHARS + 1)) == 0  # no answer shown whole
    assert len(html) < 1_500_000, len(html)

    out = tmp_path / "compare"
    done = cli("compare", str(honest), str(forged), "--out", str(out))
    assert done.returncode == 0, done.stderr
    compare = (out / "compare.md").read_text()
    assert not any(r.startswith("| forged") for r in _table_rows(compare))
    compare_prose = re.sub(r"`[^`\n]*`", "``", compare)
    assert "<script" not in compare_prose
    assert not any(b in compare.encode() for b in CONTROL_BYTES)
    for line in compare.splitlines():
        assert not line.startswith("forged"), line  # no note takes the fake text as a prefix
