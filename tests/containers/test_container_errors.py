"""Images and engines that cannot work: each gives an error that says what to fix, before any work."""

from __future__ import annotations

import os
import time
from pathlib import Path

import docker
import pytest
from containertools import TEST_IMAGE, cli, run_containers

pytestmark = pytest.mark.containers

EXIT_USAGE, EXIT_SYSTEM = 2, 3


def run_image(mini: Path, out: Path, *extra: str, image: str = TEST_IMAGE) -> tuple[int, str]:
    done = cli("--image", image, "--dataset", str(mini), "--out", str(out), *extra)
    return done.returncode, " ".join(done.stderr.split())


def test_no_engine(mini: Path, tmp_path: Path) -> None:
    env = dict(os.environ, DOCKER_HOST="unix:///nonexistent/docker.sock")
    done = cli("--image", "any:1", "--dataset", str(mini), "--out", str(tmp_path / "r"), env=env)
    assert done.returncode == EXIT_USAGE
    assert "cannot reach the Docker engine" in done.stderr and "dockerd" in done.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.usefixtures("engine")
def test_missing_image(mini: Path, tmp_path: Path) -> None:
    code, err = run_image(mini, tmp_path / "r", image="apmbench/no-such-system:1")
    assert code == EXIT_USAGE
    assert "image 'apmbench/no-such-system:1' is not on the Docker engine" in err
    assert "make images" in err and "docker load" in err
    assert not (tmp_path / "r").exists()  # nothing started, nothing written


@pytest.mark.usefixtures("images")
def test_gpu_request_on_an_engine_without_gpus(
    mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    if "nvidia" in (engine.info().get("Runtimes") or {}):
        pytest.skip("this engine has an NVIDIA runtime")
    code, err = run_image(mini, tmp_path / "r", "--gpus", "all", "--env", "TESTSYS=null")
    assert code == EXIT_USAGE, err
    assert "--gpus all: the Docker engine has no GPU runtime" in err
    assert "could not select device driver" in err and "--gpus none" in err
    assert not (tmp_path / "r").exists() and run_containers(engine, tmp_path / "r") == []


@pytest.mark.usefixtures("images")
def test_wrong_protocol_version(mini: Path, tmp_path: Path, engine: docker.DockerClient) -> None:
    code, err = run_image(mini, tmp_path / "r", "--env", "TESTSYS=wrong-version")
    assert code == EXIT_SYSTEM, err
    assert "failed the start-up canary" in err
    assert "speaks protocol 2.0, this harness speaks 1." in err
    assert run_containers(engine, tmp_path / "r") == []
    assert "serving wrong-version" in (tmp_path / "r" / "logs" / "system.log").read_text()


@pytest.mark.usefixtures("images")
def test_no_health_service(mini: Path, tmp_path: Path, engine: docker.DockerClient) -> None:
    started = time.monotonic()
    code, err = run_image(
        mini, tmp_path / "r", "--env", "TESTSYS=no-health", "--startup-timeout", "900"
    )
    # At once, not after --startup-timeout: a bound the setting sets, not the machine.
    assert time.monotonic() - started < 450
    assert code == EXIT_SYSTEM, err
    assert "does not serve the gRPC health service (grpc.health.v1.Health)" in err
    assert "serving nothing at unix:/run/apmbench/sock" in err  # its output, in the message
    assert run_containers(engine, tmp_path / "r") == []


@pytest.mark.usefixtures("images")
def test_a_server_that_exits_at_start(
    mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    code, err = run_image(mini, tmp_path / "r", "--env", "TESTSYS=no_such_module:Nope")
    assert code == EXIT_SYSTEM, err
    assert "did not become ready" in err and "exited with code 1" in err
    assert "cannot import 'no_such_module'" in err
    assert run_containers(engine, tmp_path / "r") == []


@pytest.mark.usefixtures("images")
def test_allow_network_on_an_engine_without_that_network(
    mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    if any(n.name == "bridge" for n in engine.networks.list()):
        pytest.skip("this engine has a bridge network")
    code, err = run_image(mini, tmp_path / "r", "--allow-network", "--env", "TESTSYS=null")
    assert code == EXIT_USAGE, err
    assert "network 'bridge' does not exist on this Docker engine" in err
    assert "would have no network at all" in err and "--network" in err
    assert not (tmp_path / "r").exists()
