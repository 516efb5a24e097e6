"""What the container tests share: names, the skip-or-fail rule, run containers, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.models.containers import Container

from apmbench.harness.runtimes.docker import leftovers, socketdir

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TEST_IMAGE = "apmbench-test/systems:latest"
REQUIRED = any(
    os.environ.get(name, "").lower() in ("1", "true", "yes")
    for name in ("CI", "APMBENCH_REQUIRE_DOCKER")
)
HOW = (
    "To run them (as root): `apt-get install -y docker.io mmdebstrap`, "
    "`dockerd --storage-driver=overlay2 --iptables=false --bridge=none &`, then `make test` "
    "(docs/containers.md). With CI=true they fail instead of skipping."
)


def unavailable(reason: str) -> None:
    """Skip locally; fail where the container tier must run (CI)."""
    if REQUIRED:
        pytest.fail(f"container tests cannot run: {reason}", pytrace=False)
    pytest.skip(f"container tests skipped: {reason}. {HOW}")


def run_containers(engine: docker.DockerClient, run_dir: Path) -> list[Container]:
    """Every container, running or not, that belongs to the run in `run_dir`."""
    key = leftovers.run_key(run_dir)
    # The run may remove one between the engine's list and its inspect (CI: a 404 there).
    label = {"label": f"{leftovers.RUN}={key}"}
    return list(engine.containers.list(all=True, filters=label, ignore_removed=True))


def socket_mounts(harness_pid: int | None = None) -> list[str]:
    """Mount points of the harness's socket-directory tmpfs on this host; with
    `harness_pid`, only that harness's (the pid is in the name): another harness on the
    same host, or one killed earlier, is no leftover of this one."""
    lines = Path("/proc/self/mounts").read_text().splitlines()
    mounts = [line.split()[1] for line in lines if line.split()[0] == socketdir.FS_NAME]
    if harness_pid is None:
        return mounts
    return [m for m in mounts if Path(m).name.startswith(f"apmd-{harness_pid}-")]


def socket_dirs(harness_pid: int | None = None) -> list[str]:
    """Socket directories on this host, mounted or not (a harness removes its own); with
    `harness_pid`, only those that harness made (the pid is in the name): another harness
    running on the same host at the same time is no leftover of this one."""
    name = Path(socketdir.PREFIX).name + ("*" if harness_pid is None else f"{harness_pid}-*")
    return sorted(str(p) for p in Path(socketdir.PREFIX).parent.glob(name))


def evaluate_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "apmbench.harness.cli", "evaluate", *args]


class Finished(subprocess.CompletedProcess[str]):
    """A completed `evaluate`, with the pid its harness ran as (it names its socket
    directories: tests running beside it have their own)."""

    pid: int


def cli(*args: str, timeout: float = 240, **kwargs: Any) -> Finished:
    """Run `apmbench-grpc evaluate ARGS` to the end; returns the completed process."""
    with subprocess.Popen(
        evaluate_cmd(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    done = Finished(proc.args, proc.returncode, stdout, stderr)
    done.pid = proc.pid
    return done
