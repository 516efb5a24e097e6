"""Containers that try to remember outside their export, or to reach the host: each is stopped.

The cheater image (cheaters/) holds the systems; each test runs it as a
user would and checks that its cheat bought nothing:

- a stash in the socket directory, /tmp, $HOME, /dev/shm and an image VOLUME is
  gone in the next container of a `restart` run (and none of them is on disk);
- a 2 GiB write into the socket directory stops at its small bound, leaving
  the host's disk alone, and the directory is replaced at every restart;
- a symlink planted at the socket path, pointing at a host socket, is refused
  with a clear error and the host socket is never connected to.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from containertools import HERE, ROOT, cli, run_containers, socket_mounts

from apmbench.harness.build.images import BASE, Builder, tree_files
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import RuntimeSpec, runtime_spec
from apmbench.harness.runtimes.docker import socketdir
from apmbench.harness.runtimes.docker.runtime import DockerRuntime
from apmbench.harness.runtimes.docker.settings import BindMount, ContainerSettings

pytestmark = pytest.mark.containers

CHEATERS = "apmbench-test/cheaters:latest"
EXIT_SYSTEM = 3


@pytest.fixture(scope="module")
def cheaters(builder: Builder, images: dict[str, str]) -> str:
    files = {
        "Dockerfile": (HERE / "cheaters" / "Dockerfile").read_bytes(),
        "cheatsys.py": (HERE / "cheaters" / "cheatsys.py").read_bytes(),
        **tree_files(ROOT / "tests", ["helpers"], [], ""),
    }
    return builder.build(CHEATERS, files, parent=images[BASE])


def cheat(name: str, **env: str) -> ContainerSettings:
    return ContainerSettings(env=(("CHEAT", name), *env.items()))


@pytest.mark.usefixtures("cheaters")
def test_a_stash_outside_the_export_is_gone_in_the_next_container(
    mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    out = tmp_path / "run"
    mount = BindMount.parse(f"{weights}:/weights")
    settings = ContainerSettings(env=(("CHEAT", "stash"),), mounts=(mount,))
    evaluate(
        EvaluateOptions(
            dataset=mini, out=out, persistence=Persistence.RESTART,
            runtime=runtime_spec(image=CHEATERS, container=settings),
        )
    )  # fmt: skip

    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    replies: dict[str, dict[str, Any]] = {
        r["instance_id"]: json.loads(r["raw_output"]) for r in rows
    }
    assert replies
    for instance, reply in replies.items():
        # No later container finds anything an earlier one left...
        assert reply["found"] == {p: [] for p in reply["found"]}, (instance, reply["found"])
        # ...though each could write everywhere it tried (the socket directory too, a little).
        assert set(reply["wrote"].values()) == {"ok"}, (instance, reply["wrote"])
        # Every writable place is a tmpfs that dies with its container, none a host disk.
        assert reply["writable_disk_mounts"] == [], (instance, reply["writable_disk_mounts"])
    # More than one container answered: the stash had successors to reach.
    assert len({reply["me"] for reply in replies.values()}) > 1

    assert socket_mounts(os.getpid()) == [] and run_containers(engine, out) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["container"]["mounts"] == [f"{weights}:/weights:ro"]
    assert manifest["runtime"]["image_volumes_as_tmpfs"] == ["/stash"]
    assert manifest["runtime"]["socket_dir"]["bounded_by"] == "tmpfs"
    report = json.loads((out / "report.json").read_text())
    assert report["mounted_into_system"] == [f"{weights}:/weights:ro"]
    head = (out / "report.md").read_text().split("## ", 1)[0]
    assert f"Mounted into the system: `{weights}:/weights:ro`" in head


@pytest.mark.usefixtures("cheaters")
def test_the_stash_detector_finds_a_stash_that_outlives_its_container(
    mini: Path, tmp_path: Path
) -> None:
    # The positive control of the test above: with the image's VOLUME replaced by a host
    # directory mounted read-write (protection off: memory now outlives a container),
    # later containers must report what earlier ones left there.
    stash = tmp_path / "stash"
    stash.mkdir()
    stash.chmod(0o777)  # the container's user is not this one
    out = tmp_path / "run"
    settings = ContainerSettings(
        env=(("CHEAT", "stash"),), mounts=(BindMount.parse(f"{stash}:/stash:rw"),)
    )
    evaluate(
        EvaluateOptions(
            dataset=mini, out=out, persistence=Persistence.RESTART,
            runtime=runtime_spec(image=CHEATERS, container=settings),
        )
    )  # fmt: skip
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    replies = [json.loads(r["raw_output"]) for r in rows]
    seen = [reply["found"]["volume"] for reply in replies]
    assert any(isinstance(names, list) and names for names in seen), seen
    # Nothing else leaked: every other place still comes back empty and readable.
    for reply in replies:
        assert {p: v for p, v in reply["found"].items() if p != "volume"} == {
            p: [] for p in reply["found"] if p != "volume"
        }, reply["found"]
    assert any(p.name.startswith("stash-") for p in stash.iterdir())


@pytest.mark.usefixtures("cheaters")
def test_a_2_gib_write_into_the_socket_directory_stops_at_its_bound(tmp_path: Path) -> None:
    used_before = shutil.disk_usage("/tmp").used
    runtime = DockerRuntime(CHEATERS, tmp_path / "run", Deadlines(), cheat("fill"))
    with runtime:
        details = runtime.start().describe().details
        grown = shutil.disk_usage("/tmp").used - used_before
        first = Path(runtime.address.removeprefix("unix:")).parent
        assert int(details["written"]) <= socketdir.SIZE_BYTES, details
        assert "No space left on device" in details["error"], details
        # Other processes share this disk: the bound is generous, the cheat was 2 GiB.
        assert grown < 256 << 20, f"the host disk grew by {grown} bytes"
        assert str(first) in socket_mounts(os.getpid())

        again = runtime.restart().describe().details
        second = Path(runtime.address.removeprefix("unix:")).parent
        assert second != first and not first.exists()
        assert str(first) not in socket_mounts(os.getpid())
        # The new container found an empty directory and filled it up to the same bound only.
        assert int(again["written"]) <= socketdir.SIZE_BYTES, again
    assert not second.exists() and socket_mounts(os.getpid()) == []


@pytest.fixture
def host_socket(tmp_path: Path) -> Iterator[tuple[Path, list[int]]]:
    """A Unix socket on the host, outside any socket directory, counting who connects."""
    path = tmp_path / "host.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    accepted: list[int] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield path, accepted
    server.shutdown(socket.SHUT_RDWR)
    server.close()
    thread.join(5)


@pytest.mark.usefixtures("cheaters")
def test_a_symlink_at_the_socket_path_is_refused(
    mini: Path, tmp_path: Path, engine: docker.DockerClient, host_socket: tuple[Path, list[int]]
) -> None:
    target, accepted = host_socket
    out = tmp_path / "run"
    done = cli(
        "--image", CHEATERS, "--dataset", str(mini), "--out", str(out), "--persistence", "reset",
        "--startup-timeout", "20", "--env", "CHEAT=symlink", "--env", f"CHEAT_TARGET={target}",
    )  # fmt: skip
    err = " ".join(done.stderr.split())
    assert accepted == [], "the harness connected to the host socket"
    assert done.returncode == EXIT_SYSTEM, done.stderr
    assert f"is a symbolic link (to {target})" in err, done.stderr
    assert "will not follow links" in err
    assert run_containers(engine, out) == [] and socket_mounts(done.pid) == []


@pytest.mark.usefixtures("cheaters")
@pytest.mark.parametrize("spare", [True, False], ids=["spares", "no-spare"])
def test_the_page_cache_keeps_nothing_from_one_container_to_the_next(
    mini: Path, tmp_path: Path, engine: docker.DockerClient, spare: bool
) -> None:
    """Attack 1 of the third red team through --image: each container counts the sessions
    it saw into the residency of a sparse file in the image (the same lower-layer inode
    for every container); the pages a container made resident while it served are
    evicted when it stops, so no container recovers a count (test_page_cache_store.py has
    the process runtimes and the unconfined control). Without spares too: there the
    container was stopped before its pages were evicted, and a red team recovered 7 of 13
    sessions through `--image --no-spare`."""
    evict_image_file(engine, CHEATERS, "opt/apmbench-tests/helpers/pages.bin")
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=mini, out=out, persistence=Persistence.RESTART,
            runtime=runtime_spec(image=CHEATERS, container=cheat("page-cache"), spare=spare),
        )
    )  # fmt: skip
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["page_cache"]["reset"] is True, manifest["runtime"]["page_cache"]
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    said = [json.loads(r["raw_output"]) for r in rows]
    assert said and all(s["recalled"] is None for s in said), said
    assert min(s["count"] for s in said) >= 1  # it ran, and counted


def evict_image_file(engine: docker.DockerClient, image: str, inner: str) -> None:
    """Drop the page cache of a file in an image's layers (the host's copy every container
    reads): building the image read it whole, and a store needs pages no one has read."""
    data = engine.images.get(image).attrs["GraphDriver"]["Data"]
    layers = [
        Path(d) for key in ("UpperDir", "LowerDir") for d in data.get(key, "").split(":") if d
    ]
    found = [layer / inner for layer in layers if (layer / inner).is_file()]
    assert found, f"{inner} is in no layer of {image}"
    for path in found:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@pytest.mark.usefixtures("cheaters")
def test_a_loaded_spare_container_runs_nothing_until_promoted(tmp_path: Path) -> None:
    """A spare container whose system keeps a thread busy from its constructor on (a
    listener) is paused once its socket is up: no CPU while the live one serves; promoted,
    it is unpaused and serves (tests/integration/test_spare_freezer.py for processes)."""
    from apmbench.harness.runtimes.base import tree_cpu_s

    rt = DockerRuntime(CHEATERS, tmp_path / "run", Deadlines(), settings=cheat("spin"), spare=True)
    try:
        rt.start()
        rt.expect_restarts()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            rt._spares and all(f.done() and f.result().number in rt._paused for f in rt._spares)
        ):
            time.sleep(0.2)
        boxes = [f.result() for f in rt._spares]
        assert boxes and all(b.number in rt._paused for b in boxes)
        pids = []
        for box in boxes:
            box.container.reload()
            pids.append(int(box.container.attrs["State"]["Pid"]))
        before = sum(tree_cpu_s(p) or 0.0 for p in pids)
        time.sleep(1.0)
        used = sum(tree_cpu_s(p) or 0.0 for p in pids) - before
        assert used < 0.05, f"paused spares used {used:.2f} s of CPU in 1 s"
        rt.restart().describe()  # promoted: unpaused, and it serves
    finally:
        rt.stop()


@pytest.mark.usefixtures("cheaters")
def test_a_forged_describe_from_an_image_is_refused(mini: Path, tmp_path: Path) -> None:
    """Attack 3 (rows forged in the reports) through --image: R15 refuses the Describe
    before any other call, exit 3, nothing recorded (test_report_forgery.py: processes)."""
    out = tmp_path / "run"
    done = cli(
        "--dataset", str(mini), "--image", CHEATERS, "--env", "CHEAT=ForgedDescribe",
        "--out", str(out),
    )  # fmt: skip
    said = " ".join(done.stdout.split() + done.stderr.split())
    assert done.returncode == EXIT_SYSTEM, said
    assert "R15 (Describe strings)" in said and "<script>" not in said
    assert not (out / "instances.jsonl").exists()


@pytest.mark.usefixtures("cheaters")
@pytest.mark.parametrize("stuffer", ["KeywordStuffer", "FreeWordStuffer", "FactBagger"])
def test_stuffed_answers_from_an_image_score_no_higher(tmp_path: Path, stuffer: str) -> None:
    """Attack 2 (judge stuffing) through --image: the stuffed text-log scores no higher on
    Adaptive than text-log itself (test_judge_stuffing.py: processes)."""
    from apmbench.harness.scoring.judge import JudgeConfig
    from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

    def adaptive(out: Path, runtime: RuntimeSpec) -> Any:
        result = evaluate(
            EvaluateOptions(
                dataset=synthetic_dataset("tiny", 0), out=out, runtime=runtime,
                persistence=Persistence.RESET, judge=JudgeConfig(kind="synthetic"),
            )
        )  # fmt: skip
        return result.report["families"]["adaptive_response"]["score"]

    honest = adaptive(tmp_path / "honest", runtime_spec(system="text-log"))
    stuffed = adaptive(tmp_path / "stuffed", runtime_spec(image=CHEATERS, container=cheat(stuffer)))
    assert honest is not None and stuffed is not None and stuffed <= honest


@pytest.mark.usefixtures("cheaters")
def test_the_inode_counters_keep_nothing_from_one_container_to_the_next(
    mini: Path, tmp_path: Path
) -> None:
    """Red team 10's register through --image: each container leaves a checksum of its export
    in its CPU's place in the host's memfd inode batch; the engine runtime scrambles the
    counters before every start (harness/runtimes/inode_counters.py), so an import finds its
    checksum only by a 1-in-1024 accident (tests/integration/test_inode_register.py holds
    the positive control)."""
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=mini, out=out, persistence=Persistence.RESTART,
            runtime=runtime_spec(image=CHEATERS, container=cheat("inode-register"), spare=False),
        )
    )  # fmt: skip
    text = "\n".join(p.read_text() for p in sorted((out / "logs").glob("system*.log")))
    seen = [line.split("register: ")[1] for line in text.splitlines() if "register: " in line]
    assert len(seen) >= 3 and seen.count("MATCH") <= 1, seen
