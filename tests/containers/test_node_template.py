"""The Node.js template as an image: built from containers/template-node with npm, it passes
`check --image` and a tiny `evaluate --image` runs on it in restart mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import docker
import pytest
from containertools import run_containers, unavailable

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.harness.build.images import NODE_TEMPLATE, Builder

pytestmark = pytest.mark.containers


@pytest.fixture(scope="module")
def node_image(builder: Builder) -> str:
    try:
        return builder.node_template()
    except ApmbenchError as e:
        unavailable(f"the Node.js template image cannot be built ({e})")
        raise AssertionError("unreachable") from e


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "apmbench.harness.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_the_node_template_image_passes_check(
    node_image: str, tmp_path: Path, engine: docker.DockerClient
) -> None:
    done = cli("check", "--image", NODE_TEMPLATE, "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "check.json").read_text())
    assert report["ok"] and report["counts"]["fail"] == 0
    assert report["target"]["system"]["name"] == "template-node"
    assert report["target"]["system"]["protocol_version"] == "1.1"
    outcomes = {c["name"]: c["outcome"] for c in report["checks"]}
    assert outcomes["persistence-restart"] == "pass"  # a second container imported the state
    assert outcomes["reflection"] == "pass"
    assert run_containers(engine, tmp_path) == []


def test_the_node_template_image_evaluates(
    node_image: str, mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    out = tmp_path / "run"
    done = cli(
        "evaluate", "--image", NODE_TEMPLATE, "--dataset", str(mini), "--out", str(out),
        "--persistence", "restart",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["system"]["name"] == "template-node"
    assert manifest["runtime"]["kind"] == "docker"
    rows = (out / "instances.jsonl").read_text().splitlines()
    assert rows and all(json.loads(r)["raw_output"] for r in rows)
    assert run_containers(engine, out) == []
