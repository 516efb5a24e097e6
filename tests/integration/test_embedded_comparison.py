"""`evaluate` with no system: every compared system in turn on one resolved dataset. One
that fails is reported, the others still run and are compared, and the command exits
with the failure's code."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.commands import evaluate as evaluate_command
from apmbench.harness.commands.common import EXIT_SYSTEM

MINI = Path(__file__).parents[1] / "fixtures" / "mini"


@pytest.mark.usefixtures("helper_env")
def test_a_failing_system_leaves_the_others_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    systems = ["null", "helpers.faulty:Faulty", "text-only"]
    monkeypatch.setattr(evaluate_command, "compared_systems", lambda: systems)
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
