"""A `restart` run with spares says, at the head of every report, that its Storage/hr is a
lower bound: a live start can hand memory to the spare loading beside it through the page
cache, which no export counts. Only `--no-spare` removes the overlap."""

from __future__ import annotations

from typing import Any

import pytest

from apmbench.harness.reports.confinement import SPARE_NOTE, confinement_lines
from apmbench.harness.reports.head import header
from apmbench.harness.run.manifest import Manifest

# What each runtime's describe() records of its spares (harness/runtimes).
PROCESS = {"kind": "process", "spare": True, "spares": {"frozen_once_loaded": True}}
PROCESS_UNFROZEN = {"kind": "process", "spare": True}
COMMAND = {"kind": "command", "spare": True, "spares": {"frozen_once_loaded": False}}
DOCKER = {"kind": "docker", "spares": {"frozen_once_loaded": True, "how": "docker pause"}}
NO_SPARE_PROCESS = {"kind": "process", "spare": False}
NO_SPARE_DOCKER = {"kind": "docker", "spares": {"frozen_once_loaded": False, "how": "docker pause"}}
ENDPOINT = {"kind": "endpoint", "address": "localhost:50051"}


def _manifest(runtime: dict[str, Any], persistence: str | None = "restart") -> dict[str, Any]:
    settings = {} if persistence is None else {"persistence": persistence}
    return {"system": {"name": "text-log"}, "settings": settings, "runtime": runtime}


@pytest.mark.parametrize("runtime", [PROCESS, PROCESS_UNFROZEN, COMMAND, DOCKER])
def test_a_restart_run_with_spares_says_its_storage_is_a_lower_bound(
    runtime: dict[str, Any],
) -> None:
    manifest = _manifest(runtime)
    assert Manifest.of(manifest).spares_beside_live
    lines = confinement_lines({}, manifest)
    assert SPARE_NOTE in lines
    assert "lower bound" in SPARE_NOTE and "`--no-spare`" in SPARE_NOTE
    # report.json's header carries it too (and so compare.md and the leaderboard).
    assert any("Storage/hr is a lower bound" in n for n in header({}, manifest)["notes"])


def test_a_run_from_before_persistence_was_recorded_is_a_restart_run() -> None:
    assert Manifest.of(_manifest(PROCESS, persistence=None)).spares_beside_live


@pytest.mark.parametrize("runtime", [NO_SPARE_PROCESS, NO_SPARE_DOCKER, ENDPOINT, {}])
def test_a_run_without_spares_says_nothing_of_them(runtime: dict[str, Any]) -> None:
    manifest = _manifest(runtime)
    assert not Manifest.of(manifest).spares_beside_live
    assert SPARE_NOTE not in confinement_lines({}, manifest)


@pytest.mark.parametrize("persistence", ["reset", "trust"])
def test_a_run_whose_process_lived_across_sessions_gets_the_unverified_line_instead(
    persistence: str,
) -> None:
    # Its storage is unverified outright (the process kept RAM across sessions): a lower
    # bound on top of that would say less than the line already there.
    manifest = _manifest(PROCESS, persistence)
    assert not Manifest.of(manifest).spares_beside_live
    lines = confinement_lines({}, manifest)
    assert SPARE_NOTE not in lines
    assert any("Storage/hr unverified" in line for line in lines)
