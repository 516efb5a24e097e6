"""Containers that die or hang, and harnesses that are killed: clear errors, nothing finished lost.

Each run is the CLI in a subprocess on the mini dataset (two trajectories)
with `reset` persistence, so one container serves the whole run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import docker
import pytest
from containertools import TEST_IMAGE, cli, evaluate_cmd, run_containers
from docker.models.containers import Container

from apmbench.harness.suites.apmbench.dataset import load_dataset

pytestmark = [pytest.mark.containers, pytest.mark.usefixtures("images")]

EXIT_SYSTEM = 3


def args(mini: Path, out: Path, system: str, *extra: str) -> list[str]:
    return [
        "--image", TEST_IMAGE, "--dataset", str(mini), "--out", str(out),
        "--persistence", "reset", "--env", f"TESTSYS={system}", *extra,
    ]  # fmt: skip


def wait_for(
    what: str, check: Callable[[], bool], proc: subprocess.Popen[str], limit: float = 120
) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert proc.poll() is None, f"the run ended before {what}: {proc.communicate()[1]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def only_container(engine: docker.DockerClient, out: Path) -> Container:
    found = run_containers(engine, out)
    assert len(found) == 1, [c.name for c in found]
    return found[0]


def assert_complete(mini: Path, out: Path) -> None:
    instances = (out / "instances.jsonl").read_text().splitlines()
    assert len(instances) == sum(len(c.probes) for c in load_dataset(mini).candidates)
    assert (out / "report.json").is_file() and not (out / "work").exists()


def test_a_container_killed_mid_trajectory(
    mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    out = tmp_path / "run"
    slow = args(mini, out, "helpers.systems:SlowIngest", "--env", "APMBENCH_INGEST_DELAY=0.03")
    proc = subprocess.Popen(evaluate_cmd(*slow), stderr=subprocess.PIPE, text=True)
    first = out / "trajectories" / "T01.json"
    wait_for("T01 finished", first.exists, proc)
    kept = first.read_bytes()
    only_container(engine, out).kill()
    _, stderr = proc.communicate(timeout=120)

    assert proc.returncode == EXIT_SYSTEM, stderr
    flat = " ".join(stderr.split())
    assert "exited with code 137 (SIGKILL: killed from outside" in flat, stderr
    assert f"Its full log is in {out / 'logs' / 'system.log'}" in flat, stderr
    assert "rerun with --resume" in flat
    assert "serving helpers.systems:SlowIngest" in (out / "logs" / "system.log").read_text()
    assert first.read_bytes() == kept and not (out / "trajectories" / "T02.json").exists()
    assert run_containers(engine, out) == []  # the dead container was removed, its logs kept

    again = cli(*slow[:-2], "--resume")  # without the delay: resuming needs no slow ingest
    assert again.returncode == 0, again.stderr
    assert first.read_bytes() == kept, "a finished trajectory was run again"
    assert_complete(mini, out)


def test_a_container_that_hangs(mini: Path, tmp_path: Path, engine: docker.DockerClient) -> None:
    out = tmp_path / "run"
    hang = args(mini, out, "hang", "--query-timeout", "3")
    started = time.monotonic()
    done = cli(*hang, "--env", "APMBENCH_HANG_TRAJECTORY=T02")
    # Well before the default query deadline (600 s) would have fired: the flag's did.
    assert time.monotonic() - started < 300
    assert done.returncode == EXIT_SYSTEM, done.stderr
    flat = " ".join(done.stderr.split())
    assert "DEADLINE_EXCEEDED" in flat and "is still running but did not answer Query" in flat
    assert "hanging in a query of T02" in flat  # its last output, in the message itself
    assert "hanging in a query of T02" in (out / "logs" / "system.log").read_text()
    assert (out / "trajectories" / "T01.json").exists()
    assert not (out / "trajectories" / "T02.json").exists()
    assert run_containers(engine, out) == []

    again = cli(*hang, "--resume")
    assert again.returncode == 0, again.stderr
    assert_complete(mini, out)


# Exclusive: any evaluate on this host removes a dead harness's leftovers, so another
# worker's run would remove the one this test kills before its own next run can.
@pytest.mark.exclusive
def test_leftovers_of_a_killed_harness_are_removed_by_the_next_run(
    mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    killed = tmp_path / "killed"
    slow = args(mini, killed, "helpers.systems:SlowIngest", "--env", "APMBENCH_INGEST_DELAY=0.03")
    proc = subprocess.Popen(evaluate_cmd(*slow), stderr=subprocess.PIPE, text=True)
    wait_for("T01 finished", (killed / "trajectories" / "T01.json").exists, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    leftover = only_container(engine, killed)
    assert leftover.status == "running"  # nobody removed it: SIGKILL gives no chance
    socket_dir = Path(leftover.labels["org.apmbench.socket-dir"])
    assert socket_dir.is_dir()

    # Any later run on this host removes it (its harness is dead) ...
    other = tmp_path / "other"
    done = cli(*args(mini, other, "null"))
    assert done.returncode == 0, done.stderr
    assert "removing leftover container" in done.stderr and leftover.name in done.stderr
    assert run_containers(engine, killed) == [] and not socket_dir.exists()

    # ... and the killed run resumes to completion.
    again = cli(*slow[:-2], "--resume")
    assert again.returncode == 0, again.stderr
    assert_complete(mini, killed)


def test_a_run_directory_in_use_is_refused(
    mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    out = tmp_path / "run"
    slow = args(mini, out, "helpers.systems:SlowIngest", "--env", "APMBENCH_INGEST_DELAY=0.05")
    proc = subprocess.Popen(evaluate_cmd(*slow), stderr=subprocess.PIPE, text=True)
    try:
        wait_for("the container", lambda: bool(run_containers(engine, out)), proc)
        wait_for("the manifest", (out / "manifest.json").exists, proc)
        second = cli(*slow, "--resume")
        assert second.returncode == 2, second.stderr
        assert "is in use by a running harness" in " ".join(second.stderr.split())
        assert proc.poll() is None  # the first run was not disturbed
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert run_containers(engine, out) == []  # an interrupted harness removes its container
    assert json.loads((out / "manifest.json").read_text())["runtime"]["kind"] == "docker"


def test_a_container_out_of_memory(mini: Path, tmp_path: Path, engine: docker.DockerClient) -> None:
    out = tmp_path / "run"
    hog = args(mini, out, "hog", "--memory", "256m", "--env", "APMBENCH_HOG_TRAJECTORY=T02")
    done = cli(*hog)
    assert done.returncode == EXIT_SYSTEM, done.stderr
    flat = " ".join(done.stderr.split())
    assert "killed for running out of memory at its 256 MiB limit: raise --memory" in flat
    assert "allocating in T02" in (out / "logs" / "system.log").read_text()
    assert (out / "trajectories" / "T01.json").exists()
    assert run_containers(engine, out) == []
