"""Hostile and broken images against the container runtime: bounded, cleaned up, recorded.

Every run is the CLI on the tiny synthetic preset with the test image serving
`helpers.faulty:Faulty` (one fault per run, chosen by $APMBENCH_FAULT), and
ends with a check that nothing of it is left on the engine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import docker
import docker.errors
import pytest
from containertools import TEST_IMAGE, cli, evaluate_cmd, run_containers
from helpers.highwater import biggest_section

from apmbench.harness.runtimes.docker import leftovers

pytestmark = [pytest.mark.containers, pytest.mark.usefixtures("images")]


def args(out: Path, fault: str, *extra: str) -> list[str]:
    return [
        "--image", TEST_IMAGE, "--synthetic", "tiny", "--seed", "0", "--out", str(out),
        "--persistence", "reset", "--env", "TESTSYS=helpers.faulty:Faulty",
        "--env", f"APMBENCH_FAULT={fault}", *extra,
    ]  # fmt: skip


def _listed(engine: docker.DockerClient, out: Path) -> bool:
    """Whether a container of the run exists; one removed while being listed counts as none."""
    try:
        return bool(run_containers(engine, out))
    except docker.errors.NotFound:
        return False


def test_markup_and_escapes_from_a_container_are_printed_as_text(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    out = tmp_path / "run"
    done = cli(*args(out, "markup:query:1"))
    assert done.returncode == 3, done.stderr
    assert "[/bogus]" in done.stderr  # in the error, and in the container's output tail
    assert not any(c in done.stderr for c in "\x1b\x07\x9b\r")
    assert run_containers(engine, out) == []


def test_sigterm_removes_the_container_and_keeps_finished_work(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        evaluate_cmd(*args(out, "hang:end_session:1", "--end-session-timeout", "120")),
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not _listed(engine, out):
        assert proc.poll() is None and time.monotonic() < deadline, "no container started"
        time.sleep(0.05)
    time.sleep(3)  # into the hanging EndSession
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr and "--resume" in stderr
    assert run_containers(engine, out) == []


def test_resume_refuses_relaxed_container_settings_naming_each(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    out = tmp_path / "run"
    # The start-up canary makes the first EndSession: crash at the run's first.
    assert cli(*args(out, "crash:end_session:2")).returncode == 3
    assert (out / "manifest.json").exists()
    relaxed = cli(
        *args(out, "none"),
        "--resume",
        "--cap-add",
        "SYS_ADMIN",
        "--writable-root",
        "--memory",
        "none",
    )
    assert relaxed.returncode == 2, relaxed.stderr
    flat = " ".join(relaxed.stderr.split())
    for what in ("cap_add", "read_only_root", "memory_bytes", "relaxations"):
        assert f"confinement.container.{what}" in flat, flat
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["container"]["relaxations"] == []
    assert cli(*args(out, "none"), "--resume").returncode == 0


def test_log_flood_is_bounded_on_disk_and_in_the_engine(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    out = tmp_path / "run"
    done = cli(*args(out, "flood::0:3000000", "--max-log-size", "64k", "--persistence", "restart"))
    assert done.returncode == 0, done.stderr
    log = out / "logs" / "system.log"
    text = log.read_bytes()
    starts = text.count(b"--- container ")
    assert starts >= 2 and text.count(b"output truncated") == starts
    assert biggest_section(log) <= (64 << 10) + 1024
    container = json.loads((out / "manifest.json").read_text())["runtime"]["container"]
    assert container["log_driver"]["max-size"] == str(1 << 20)
    assert container["cpus"] <= (os.cpu_count() or 1) and container["cpus_requested"] == 4.0


def test_forged_labels_are_not_trusted_by_cleanup(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    victim = Path(tempfile.mkdtemp(prefix="victim-", dir="/tmp"))
    (victim / "precious").write_text("x")
    bait = Path(tempfile.mkdtemp(prefix="apmd-", dir="/tmp"))
    dead = leftovers.Owner(leftovers.Owner.me().host, 4_000_001, 1.0)
    made = leftovers.labels("forged", tmp_path, "T1", dead, bait)
    forged = {**made, leftovers.SOCKET_DIR: f"{bait}/../{victim.name}"}
    copied = engine.containers.create(TEST_IMAGE, labels=forged, name=f"forged-{uuid.uuid4().hex}")
    genuine = engine.containers.create(TEST_IMAGE, labels=made, name=f"real-{uuid.uuid4().hex}")
    try:
        removed = leftovers.clean(engine, "mine", leftovers.Owner.me())
        assert genuine.name in removed and not bait.exists()
        assert copied.name not in removed and (victim / "precious").exists()
        copied.reload()
    finally:
        for c in (copied, genuine):
            leftovers.remove(c)
        (victim / "precious").unlink()
        victim.rmdir()
        if bait.exists():
            bait.rmdir()


@pytest.mark.parametrize(
    ("fault", "extra", "words"),
    [
        ("oom:push:1", ("--memory", "256m"), "out of memory"),
        ("threads:push:1", ("--pids-limit", "64"), "--resume"),
    ],
)
def test_resource_exhaustion_fails_the_run_cleanly(
    tmp_path: Path, engine: docker.DockerClient, fault: str, extra: tuple[str, ...], words: str
) -> None:
    out = tmp_path / "run"
    done = cli(*args(out, fault, *extra), timeout=300)
    assert done.returncode == 3, done.stderr
    assert words in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr
    assert run_containers(engine, out) == []
    assert cli(*args(out, "none", *extra), "--resume").returncode == 0


def test_cleanup_skips_a_container_removed_between_list_and_inspect(
    tmp_path: Path, engine: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another run on the same engine removes its container while this one lists leftovers:
    # the engine's list still names it, its inspect answers 404 (seen in CI).
    dead = leftovers.Owner(leftovers.Owner.me().host, 4_000_002, 1.0)
    made = leftovers.labels("raced", tmp_path, "T1", dead, tmp_path / "sockets")
    gone = engine.containers.create(TEST_IMAGE, labels=made, name=f"gone-{uuid.uuid4().hex}")
    listing = engine.api.containers

    def list_then_remove(*a: object, **kw: object) -> object:
        found = listing(*a, **kw)
        leftovers.remove(gone)
        return found

    monkeypatch.setattr(engine.api, "containers", list_then_remove)
    try:
        assert gone.name not in leftovers.clean(engine, "mine", leftovers.Owner.me())
    finally:
        leftovers.remove(gone)
