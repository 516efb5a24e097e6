"""Host-wide counters between two containers (helpers.proc_relay:ProcCounterRelay in the
test image): a listening container samples /proc/meminfo's Shmem, /proc/loadavg, /proc/stat
and sysinfo(2) every 2 ms, and the other counter files every 100 ms, while another
container writes 64 MiB to its /dev/shm and forks 200 processes.

Both halves run, in containers hardened as the runtime starts them: a listener in a plain
container (the engine's /proc, Docker's default masks) hears Shmem and the fork count move
and reads sysinfo; in the runtime's containers (frozen copies bound on the files runc
allows, the rest masked, sysinfo refused by the harness's profile) nothing moves.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from containertools import TEST_IMAGE
from helpers.proc_relay import FAST, FORKS, SHM_BYTES, SLOW

from apmbench.adapters.sdk import Choice, Query, QueryKind, SessionStart, UserTurn, UserTurnKind
from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.harness.runtimes import procview
from apmbench.harness.runtimes.docker.runtime import DockerRuntime
from apmbench.harness.runtimes.docker.settings import ContainerSettings

pytestmark = [pytest.mark.containers, pytest.mark.usefixtures("images")]

SYSTEM = "helpers.proc_relay:ProcCounterRelay"
QUESTION = Query(
    query_id="q", time_ms=2000, kind=QueryKind.MULTIPLE_CHOICE, system_prompt="",
    prompt="Answer with one option letter.", question="What did you hear?",
    choices=(Choice("A", "something"), Choice("B", "nothing")),
)  # fmt: skip
PLAIN_LISTENER = """
import json, signal, sys, time
from helpers.proc_relay import Listener
listener = Listener()
def report(*_):
    print(json.dumps(listener.heard()), flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR1, report)
print("listening", flush=True)
time.sleep(600)
"""
"""The plain container's listener: it is no system, so it reports when signalled."""


@pytest.fixture
def settings() -> ContainerSettings:
    tag = uuid.uuid4().hex[:12]
    return ContainerSettings(env=(("TESTSYS", SYSTEM), ("APMBENCH_CHEAT_TAG", tag)))


@pytest.fixture
def sender(tmp_path: Path, settings: ContainerSettings) -> Iterator[SystemClient]:
    with DockerRuntime(TEST_IMAGE, tmp_path / "live", Deadlines(), settings, 120) as rt:
        client = rt.start()
        client.reset("t")
        client.start_session(SessionStart("t", "s", "DAY1", 0))
        yield client


def send(client: SystemClient) -> dict[str, Any]:
    client.push([UserTurn(1000, UserTurnKind.QUESTION, "remember me")])
    sent: dict[str, Any] = json.loads(client.query(QUESTION).text)["sent"][0]
    return sent


def covered(heard: dict[str, Any], sent: dict[str, Any]) -> None:
    assert heard["from"] < sent["from"] and sent["to"] < heard["to"]  # it listened throughout
    assert set(heard["values"]) == {*FAST, *SLOW}


def test_a_plain_container_hears_the_counters_move(
    engine: docker.DockerClient, settings: ContainerSettings, sender: SystemClient
) -> None:
    listener = engine.containers.run(
        TEST_IMAGE, ["python", "-c", PLAIN_LISTENER], entrypoint=[], detach=True,
        network_mode="none", read_only=True, user=settings.user, cap_drop=["ALL"],
        security_opt=["no-new-privileges"], tmpfs={"/tmp": "rw,size=1m"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while b"listening" not in listener.logs():
            assert time.monotonic() < deadline, listener.logs()
            time.sleep(0.1)
        sent = send(sender)
        listener.kill(signal="SIGUSR1")
        listener.wait(timeout=60)
        heard = json.loads(listener.logs().decode().strip().splitlines()[-1])
    finally:
        listener.remove(force=True)
    covered(heard, sent)
    low, high = heard["ranges"]["shmem_kb"]
    assert high - low >= (SHM_BYTES >> 10) * 3 // 4, heard["ranges"]
    low, high = heard["ranges"]["processes"]
    assert high - low >= FORKS, heard["ranges"]
    assert heard["sysinfo"] == "moved"


def test_the_runtimes_container_hears_nothing(
    tmp_path: Path, settings: ContainerSettings, sender: SystemClient
) -> None:
    with DockerRuntime(TEST_IMAGE, tmp_path / "spare", Deadlines(), settings, 120) as rt:
        spare = rt.start()  # listening from here on
        sent = send(sender)
        spare.reset("t")
        spare.start_session(SessionStart("t", "s", "DAY1", 0))
        heard = json.loads(spare.query(QUESTION).text)["heard"]
        facts = rt.describe().get("proc_view")
    covered(heard, sent)
    assert heard["moved"] == [], heard
    assert heard["sysinfo"] == "EPERM"
    # The frozen meminfo and stat still parse, each with one value.
    assert heard["ranges"]["shmem_kb"][0] == heard["ranges"]["shmem_kb"][1]
    assert heard["ranges"]["processes"][0] == heard["ranges"]["processes"][1]
    view = procview.current()
    assert facts is not None
    assert facts["frozen"] == [path for _, path in view.docker_binds()]
    assert "/proc/meminfo" in facts["frozen"] and "/proc/vmstat" in facts["masked"]
