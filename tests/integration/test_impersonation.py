"""A method cannot read as another by taking its name.

A system's Describe name is its own to choose, and it was all that report.md,
compare.md and report.html printed: a method calling itself text-log stood in
every report as the reference system. Now every report names it by what the
harness ran beside that name (`Manifest.shown_name`), as the leaderboard did.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.impersonator import IMPERSONATED

from apmbench.harness.reports.system_text import md_cell

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("helper_env")]
CLI = str(Path(sys.executable).parent / "apmbench-grpc")
SPEC = "helpers.impersonator:Impersonator"
SHOWN = f"{IMPERSONATED} (run as {SPEC})"


def evaluate(system: str, out: Path) -> None:
    done = subprocess.run(
        [CLI, "evaluate", "--synthetic", "tiny", "--seed", "0", "--system", system,
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _table_names(markdown: str) -> set[str]:
    """The first cell of every table row of `markdown` (the method's name)."""
    return {
        line.split(" | ")[0].removeprefix("| ")
        for line in markdown.splitlines()
        if line.startswith("| ") and not line.startswith(("| Method", "|---"))
    }


@pytest.mark.slow
def test_a_method_named_text_log_is_shown_with_what_was_run(tmp_path: Path) -> None:
    cheat, reference = tmp_path / "cheat", tmp_path / "reference"
    evaluate(SPEC, cheat)
    evaluate(IMPERSONATED, reference)

    report = (cheat / "report.md").read_text()
    assert report.startswith(f"# APM-Bench report: {md_cell(SHOWN)}\n")
    # Markdown's escapes aside, the name reads as what it is.
    assert SHOWN in report.replace("\\(", "(").replace("\\)", ")")
    assert md_cell(IMPERSONATED) not in _table_names(report)
    # The reference system is run under its own name: shown by it alone.
    assert (reference / "report.md").read_text().startswith(f"# APM-Bench report: {IMPERSONATED}\n")

    html = (cheat / "report.html").read_text()
    assert f"<h1>APM-Bench: {SHOWN}</h1>" in html
    assert "\\(run as" not in html  # HTML gets HTML's escaping, not Markdown's

    out = tmp_path / "compare"
    done = subprocess.run(
        [CLI, "compare", str(reference), str(cheat), "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    compare = (out / "compare.md").read_text()
    # Two names, not one name told apart by directories a submitter may choose.
    assert _table_names(compare) == {IMPERSONATED, md_cell(SHOWN)}
    assert f"{IMPERSONATED} ({reference.name})" not in compare
