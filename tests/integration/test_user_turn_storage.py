"""A memory that keeps only user turns (the README's own example) shows what it stores on
the built-in benchmark: the main pass carries every session's interval markers, so its
Storage/hr is not zero, Table 3 calls it Persistent, and the report says what the main pass
carried and that registrations and ERA questions go only to their probes' forks
(docs/apmbench.md#what-storagehr-measures)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.runs import TESTS

from apmbench.harness.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

README = TESTS.parent / "README.md"


def test_the_readme_memory_of_user_turns_has_a_non_zero_storage_on_tiny(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [code] = re.findall(
        r"```python\n(from collections.abc import Iterator.*?)```", README.read_text(), re.S
    )
    assert "def ingest_user_turn" in code and "self.notes.append(turn.text)" in code
    (tmp_path / "readme_memory.py").write_text(code)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("APMBENCH_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        ["evaluate", "--synthetic", "tiny", "--seed", "0", "--system",
         "readme_memory:MyMemory", "--out", str(run)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((run / "report.json").read_text())
    turns = report["latency"]["main_pass_user_turns"]
    assert turns > 0
    assert report["storage"]["storage_per_hour_bytes"] > 0
    sessions = [json.loads(line) for line in (run / "sessions.jsonl").read_text().splitlines()]
    assert sum(s["user_turns"] for s in sessions) == turns
    md = (run / "report.md").read_text()
    # The Describe name, with what the harness ran (Manifest.shown_name); Streaming and
    # Persistent (measured).
    assert "| my-memory \\(run as readme_memory:MyMemory\\) | yes | yes |" in md
    assert (
        f"Storage/hr is measured on the main pass ({report['latency']['main_pass_frames']} "
        f"frames and {turns} user turns)" in md
    )
    assert "goes only to the forks of its own probes" in md
