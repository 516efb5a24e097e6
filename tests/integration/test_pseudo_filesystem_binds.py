"""The read side of a box: a setting that names a kernel file system is refused before
anything starts (exit 2, naming the path and the setting). A red team gave the host's
whole cgroup tree, other runs' cgroups and memory statistics included, to a box as
`APMBENCH_VLM_MODEL=/sys/fs/cgroup`; a `--command` path did the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"


def evaluate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(MINI), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


@pytest.mark.parametrize("path", ["/sys/fs/cgroup", "/proc/self", "/dev", "/sys"])
def test_a_model_directory_on_a_kernel_file_system_is_refused(tmp_path: Path, path: str) -> None:
    out = tmp_path / "run"
    done = evaluate("--system", "null", "--env", f"APMBENCH_VLM_MODEL={path}", "--out", str(out))
    assert done.returncode == 2, done.stderr[-2000:]
    said = " ".join(done.stderr.split())
    assert "APMBENCH_VLM_MODEL names /" in said and "Traceback" not in said, said
    assert not out.exists()  # nothing started, nothing written


def test_a_command_path_on_a_kernel_file_system_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    server = tmp_path / "server.py"
    server.write_text("")
    done = evaluate(
        "--command", f"{sys.executable} {server} {{address}} /proc/self/status", "--out", str(out)
    )
    assert done.returncode == 2, done.stderr[-2000:]
    said = " ".join(done.stderr.split())
    assert "--command's path '/proc/self/status' names /proc/" in said, said
    assert not out.exists()
