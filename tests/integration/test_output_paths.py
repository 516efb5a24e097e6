"""Every place a command writes is checked before anything starts (new-user report, item 1):
a file, a path under /proc, /sys or /dev, or an unwritable directory is exit 2 naming the
option and what to do: no traceback, nothing started, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from apmbench.harness.commands.out_paths import problem

CLI = str(Path(sys.executable).parent / "apmbench-grpc")
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """A directory nobody may write to: a read-only tmpfs as root (root ignores modes)."""
    path = tmp_path / "read-only"
    path.mkdir()
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(path)], check=True)
        yield path
        subprocess.run(["umount", str(path)], check=True)
    else:
        path.chmod(0o500)
        yield path
        path.chmod(0o700)


def _commands(out: str, tmp_path: Path) -> list[list[str]]:
    """Each command with the output option set to `out` (and valid everything else)."""
    run = str(tmp_path / "no-such-run")
    return [
        ["evaluate", "--dataset", str(MINI), "--system", "null", "--out", out],
        ["check", "--system", "null", "--out", out],
        ["check", "--system", "null", "--json", f"{out}/check.json"],
        ["compare", run, "--out", out],
        ["merge", run, "--out", out],
        ["score", run, "--labels", run, "--out", out],
        ["split", str(MINI), "--public", out, "--private", str(tmp_path / "private")],
        ["split", str(MINI), "--public", str(tmp_path / "public"), "--private", out],
        ["synth", "--out", out],
        ["view", run, "--out", f"{out}/view.html"],
    ]


def _bad_outputs(tmp_path: Path, unwritable: Path) -> dict[str, str]:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    return {
        "a file": str(a_file),
        "under a file": str(a_file / "run"),
        "/proc": "/proc/apmbench-run",
        "/sys": "/sys/apmbench-run",
        "unwritable": str(unwritable / "run"),
    }


@pytest.mark.slow
def test_every_command_refuses_every_bad_output_before_starting(
    tmp_path: Path, unwritable: Path
) -> None:
    for label, out in _bad_outputs(tmp_path, unwritable).items():
        for args in _commands(out, tmp_path):
            done = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
            said = " ".join(done.stderr.split())
            assert done.returncode == 2, (label, args, done.stderr)
            assert "Traceback" not in done.stderr and "Invalid value for" in said, (label, said)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "read-only"]


def test_a_missing_parent_is_created_like_mkdir_p(tmp_path: Path) -> None:
    assert problem(tmp_path / "new" / "deeper" / "run", directory=True) is None
    assert problem(tmp_path / "new" / "view.html", directory=False) is None
    assert "is a directory" in str(problem(tmp_path, directory=False))


def test_an_existing_file_is_written_over(tmp_path: Path) -> None:
    (tmp_path / "check.json").write_text("{}")
    assert problem(tmp_path / "check.json", directory=False) is None
    assert "is a file, so" in str(problem(tmp_path / "check.json" / "x", directory=False))
