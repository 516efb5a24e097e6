"""docs/checking.md says what `check` prints for the template server: nothing fails, and
the checks it names (and their number) are the ones not applicable. Run the real check on
containers/template, so the page cannot drift from it again."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = {"no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def test_checking_md_names_the_template_checks_that_do_not_apply(tmp_path: Path) -> None:
    text = " ".join((ROOT / "docs" / "checking.md").read_text().split())
    said = re.search(r"nothing fails, and (\w+) checks? (?:is|are) not applicable \((.*?)\);", text)
    assert said, "docs/checking.md no longer says what the template's check prints"
    named = re.findall(r"`([a-z-]+)`:", said.group(2))
    result = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "check", "--system", "server:MyMemory",
         "--out", str(tmp_path / "check")],
        capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONPATH": str(ROOT / "containers" / "template")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "check" / "check.json").read_text())
    not_applicable = sorted(c["name"] for c in report["checks"] if c["outcome"] == "n/a")
    assert report["counts"]["fail"] == 0
    assert sorted(named) == not_applicable
    assert NUMBERS[said.group(1)] == len(not_applicable)
