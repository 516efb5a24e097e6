"""The harness's wheel builds without setuptools' "Package would be ignored" warning and
carries its data folders: the HTML templates are a folder of data inside a package, which
Python imports as a namespace package, so setup.py must list it (and pyproject.toml its
files) or setuptools warns at every install and may leave the templates out."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_builds_without_warnings_and_holds_the_templates(tmp_path: Path) -> None:
    # A copy, so the build's egg-info and build/ never land in the checkout.
    stage = tmp_path / "stage"
    stage.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, stage / name)
    shutil.copytree(
        ROOT / "harness", stage / "harness", ignore=shutil.ignore_patterns("__pycache__")
    )
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
         "-w", str(tmp_path / "wheel"), str(stage)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = built.stdout + built.stderr
    assert built.returncode == 0, output[-3000:]
    assert "is absent from the `packages` configuration" not in output, output[-3000:]
    assert "Package would be ignored" not in output
    (wheel,) = (tmp_path / "wheel").glob("apmbench_grpc-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    templates = sorted((ROOT / "harness/orchestrate/html/templates").glob("*.j2"))
    assert templates
    for template in templates:
        assert f"apmbench/harness/orchestrate/html/templates/{template.name}" in names
