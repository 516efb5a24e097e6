"""`check` holds a server to the dialogue rule: a follow-up with its earlier turn parses and
leaves the memory as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from apmbench.harness.check import Outcome, run_suite, select
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import ProcessRuntime

pytestmark = [pytest.mark.integration]


def dialogue_outcome(system: str, tmp_path: Path) -> tuple[Outcome, str]:
    with ProcessRuntime(system, tmp_path / "system.log", Deadlines(), 60) as runtime:
        report = run_suite(runtime, select(only=["query-dialogue"]))
    (result,) = [r for r in report.results if r.name == "query-dialogue"]
    return result.outcome, result.reason


def test_a_reference_system_passes(tmp_path: Path) -> None:
    outcome, reason = dialogue_outcome("frame-archive", tmp_path)
    assert outcome is Outcome.PASS, reason


@pytest.mark.usefixtures("helper_env")
def test_remembering_the_dialogue_fails(tmp_path: Path) -> None:
    outcome, reason = dialogue_outcome("helpers.dialogue_systems:RemembersDialogue", tmp_path)
    assert outcome is Outcome.FAIL
    assert "state changed across a two-round dialogue" in reason
