"""An image that declares volumes: the harness records it and the engine keeps no volume.

Its own module because its check is engine-wide (every volume on the engine, before and
after its run) and so `exclusive` (tests/exclusive.py): it runs while no other test does,
and the suite's scheduler (by module) runs it last, where waiting costs least.
"""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest
from containertools import TEST_IMAGE, cli, run_containers

from apmbench.harness.build.images import Builder

pytestmark = [pytest.mark.containers, pytest.mark.usefixtures("images")]

VOLUME_IMAGE = "apmbench-test/volumes:latest"


def volumes(engine: docker.DockerClient) -> set[str]:
    return {str(v.name) for v in engine.volumes.list()}


# Exclusive: it compares the engine's whole list of volumes before and after its run.
@pytest.mark.exclusive
def test_an_image_with_volumes_is_reported_and_leaves_no_volume(
    tmp_path: Path, engine: docker.DockerClient, builder: Builder, images: dict[str, str]
) -> None:
    dockerfile = f"FROM {TEST_IMAGE}\nVOLUME /data /cache\n".encode()
    builder.build(VOLUME_IMAGE, {"Dockerfile": dockerfile}, parent=images[TEST_IMAGE])
    before = volumes(engine)
    out = tmp_path / "run"
    done = cli(
        "--image", VOLUME_IMAGE, "--synthetic", "tiny", "--seed", "0", "--out", str(out),
        "--persistence", "reset", "--env", "TESTSYS=helpers.faulty:Faulty",
        "--env", "APMBENCH_FAULT=none",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert volumes(engine) == before
    relaxations = json.loads((out / "manifest.json").read_text())["runtime"]["container"][
        "relaxations"
    ]
    assert any("image declares volumes" in r and "/data" in r for r in relaxations)
    assert run_containers(engine, out) == []
