"""A run directory that a SIGKILL left inside `prepare` (an empty trajectories/, logs/, the
manifest's temporary file, no manifest.json) is reusable with --resume, as a start that
failed before the manifest is; one that holds a trajectory record is not. In CI the fault
campaign's sigkill:2457 landed there, and every later resume was refused with exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from apmbench.harness.errors import RunDirError
from apmbench.harness.run.records import RunDir


def _left(root: Path) -> RunDir:
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "system.log").write_text("--- start\n")
    (root / "trajectories").mkdir()
    (root / ".manifest.json.tmp").write_text('{"benchmark": "apm')
    return RunDir(root)


def test_what_a_kill_inside_prepare_leaves_is_reusable(tmp_path: Path) -> None:
    run = _left(tmp_path / "run")
    run.check_usable(resume=True)
    run.check_usable(resume=False)


def test_a_directory_with_records_but_no_manifest_is_refused(tmp_path: Path) -> None:
    run = _left(tmp_path / "run")
    (tmp_path / "run" / "trajectories" / "T001.json").write_text("{}")
    with pytest.raises(RunDirError, match="is not an apmbench run directory"):
        run.check_usable(resume=True)
