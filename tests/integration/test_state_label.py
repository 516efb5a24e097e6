"""R16: a state's label (content_type, format_version) carries no memory. Red team 4 kept a
text log's whole memory in content_type with 0 data bytes (0 B/hr at text-log's score):
the label is handed back on ImportState and was not counted as storage. Now the label must
be a bare MIME type of at most 64 characters and stay the trajectory's first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from apmbench.harness.protocol import wire_rules

pytestmark = pytest.mark.usefixtures("helper_env")
CLI = str(Path(sys.executable).parent / "apmbench-grpc")
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"


@pytest.mark.parametrize("start", ["fresh", "template"])
@pytest.mark.parametrize("cheater", ["ContentTypeLog", "LabelChanger"])
def test_a_label_that_carries_memory_is_refused(tmp_path: Path, cheater: str, start: str) -> None:
    done = subprocess.run(
        [CLI, "evaluate", "--dataset", str(MINI), "--system", f"helpers.cheaters:{cheater}",
         "--start", start, "--persistence", "restart", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )  # fmt: skip
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 3, said
    assert "R16 (State label)" in said, said


def test_the_label_rule_one_label_at_a_time() -> None:
    assert wire_rules.label_problem("text/x-apmbench-text-log", 1) is None
    assert wire_rules.label_problem("application/x-apmbench-kv-memory+safetensors", 1) is None
    assert wire_rules.label_problem("application/json; charset=utf-8", 1) is not None
    assert wire_rules.label_problem("Application/JSON", 1) is not None
    assert wire_rules.label_problem("application/" + "x" * 60, 1) is not None
    assert wire_rules.label_problem("", 1) is not None
    assert wire_rules.label_problem("application/json", -1) is not None
    assert wire_rules.label_change_problem(("a/b", 1), ("a/b", 1)) is None
    assert wire_rules.label_change_problem(("a/b", 1), ("a/b", 2)) is not None
    assert wire_rules.label_change_problem(("a/b", 1), ("a/c", 1)) is not None
