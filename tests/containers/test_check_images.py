"""`check --image`: every reference image and the template pass; a broken image fails its check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import pytest
from containertools import ROOT, TEST_IMAGE, run_containers

from apmbench.harness.build.images import BASE, Builder, image_name, systems_list

pytestmark = [pytest.mark.containers, pytest.mark.usefixtures("images")]
TEMPLATE = "apmbench-test/template:latest"


def check_image(image: str, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    cmd = [sys.executable, "-m", "apmbench.harness.cli", "check", "--image", image,
           "--out", str(out), *extra]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    report = json.loads((out / "check.json").read_text()) if (out / "check.json").exists() else {}
    return done.returncode, report, done.stdout + done.stderr


def outcome(report: dict[str, Any], name: str) -> str:
    return next(str(c["outcome"]) for c in report["checks"] if c["name"] == name)


@pytest.mark.parametrize("system", systems_list(ROOT))
def test_every_reference_image_passes(
    system: str, tmp_path: Path, engine: docker.DockerClient
) -> None:
    code, report, output = check_image(image_name(system), tmp_path)
    assert code == 0, output
    assert report["ok"] and report["counts"]["fail"] == 0
    assert report["target"]["runtime"]["kind"] == "docker"
    assert report["target"]["system"]["name"] == system
    # Restart persistence ran for real: a second container imported the state.
    assert outcome(report, "persistence-restart") == "pass"
    assert (tmp_path / "logs" / "system.log").read_text().count("--- container") >= 2
    assert run_containers(engine, tmp_path) == []


def test_the_template_passes_out_of_the_box(
    tmp_path: Path, builder: Builder, images: dict[str, str]
) -> None:
    template = ROOT / "containers" / "template"
    files = {p.name: p.read_bytes() for p in template.iterdir() if p.is_file()}
    builder.build(TEMPLATE, files, parent=images[BASE])
    code, report, output = check_image(TEMPLATE, tmp_path)
    assert code == 0, output
    assert report["target"]["system"]["name"] == "my-memory"
    assert outcome(report, "persistence-restart") == "pass"


def test_a_broken_image_fails_exactly_its_check(tmp_path: Path) -> None:
    code, report, output = check_image(
        TEST_IMAGE, tmp_path, "--env", "TESTSYS=helpers.broken_systems:ForgetsOnRestart"
    )
    assert code == 1, output
    failed = [c["name"] for c in report["checks"] if c["outcome"] == "fail"]
    assert failed == ["persistence-restart"]
    assert "FAIL persistence-restart: breaks R6" in output and "answers changed" in output


def test_a_missing_image_is_a_usage_error(tmp_path: Path) -> None:
    code, report, output = check_image("apmbench/no-such-system:1", tmp_path)
    assert code == 2 and report == {}
    assert "image 'apmbench/no-such-system:1' is not on the Docker engine" in output
