"""Host-wide counters between a live system and its spare (helpers.proc_relay:ProcCounterRelay).

A listening system (a spare, in a run) samples /proc/meminfo's Shmem, /proc/loadavg,
/proc/stat and sysinfo(2) every 2 ms, and every other host-wide counter file every
100 ms, while another system of the same kind writes 64 MiB to its /dev/shm and forks 200
processes. Unconfined, Shmem and the fork count move by that much: a spare hears every
turn (red team 3 relayed a log at about 100 bit/s this way). In a fresh sandbox and in a
template start, every counter reads the same value from the first sample to the last (the
frozen copies of harness/runtimes/procview.py) and sysinfo is refused (EPERM).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.proc_relay import FAST, FORKS, SHM_BYTES, SLOW

from apmbench.adapters.sdk import Choice, Query, QueryKind, SessionStart, UserTurn, UserTurnKind
from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.harness.runtimes.process import ProcessRuntime, sandboxed_process
from apmbench.harness.runtimes.sandbox import find_bwrap

pytestmark = [
    pytest.mark.skipif(
        find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
    ),
    pytest.mark.usefixtures("helper_env"),
]
SYSTEM = "helpers.proc_relay:ProcCounterRelay"
MODES = [
    pytest.param("fresh", id="sandboxed"),
    pytest.param("template", id="template"),
    pytest.param("unconfined", id="unconfined"),
]
QUESTION = Query(
    query_id="q", time_ms=2000, kind=QueryKind.MULTIPLE_CHOICE, system_prompt="",
    prompt="Answer with one option letter.", question="What did you hear?",
    choices=(Choice("A", "something"), Choice("B", "nothing")),
)  # fmt: skip


@pytest.fixture
def tag() -> Iterator[str]:
    """Names the 64 MiB files; the unconfined sender's land in this host's /dev/shm."""
    name = uuid.uuid4().hex[:12]
    yield name
    for left in Path("/dev/shm").glob(f"apm-relay-{name}-*"):
        left.unlink(missing_ok=True)


def runtime(directory: Path, mode: str, tag: str) -> ProcessRuntime:
    return sandboxed_process(
        SYSTEM, directory / "system.log", Deadlines(), 180, sandbox=mode != "unconfined",
        env=(f"APMBENCH_CHEAT_TAG={tag}",), start="template" if mode == "template" else "fresh",
    )  # fmt: skip


def session(client: SystemClient) -> None:
    client.reset("t")
    client.start_session(SessionStart("t", "s", "DAY1", 0))


def answer(client: SystemClient) -> dict[str, Any]:
    said: dict[str, Any] = json.loads(client.query(QUESTION).text)
    return said


def relay(tmp_path: Path, mode: str, tag: str) -> dict[str, Any]:
    """What the listener heard while the sender sent one turn."""
    listener, sender = runtime(tmp_path / "spare", mode, tag), runtime(tmp_path / "live", mode, tag)
    try:
        spare = listener.start()  # listening from here on
        live = sender.start()
        session(live)
        live.push([UserTurn(1000, UserTurnKind.QUESTION, "remember me")])
        sent = answer(live)["sent"][0]
        session(spare)
        heard = answer(spare)["heard"]
    finally:
        sender.stop()
        listener.stop()
    assert heard["from"] < sent["from"] and sent["to"] < heard["to"]  # it listened throughout
    assert set(heard["values"]) == {*FAST, *SLOW}
    return heard


@pytest.mark.parametrize("mode", MODES)
def test_a_spare_hears_no_counter_move_while_a_live_system_sends(
    tmp_path: Path, mode: str, tag: str
) -> None:
    heard = relay(tmp_path, mode, tag)
    if mode == "unconfined":
        # Caught: the host's counters carried the turn across.
        low, high = heard["ranges"]["shmem_kb"]
        assert high - low >= (SHM_BYTES >> 10) * 3 // 4, heard["ranges"]
        low, high = heard["ranges"]["processes"]
        assert high - low >= FORKS, heard["ranges"]
        assert {"/proc/meminfo", "/proc/stat", "/proc/loadavg"} <= set(heard["moved"]), heard
        assert heard["sysinfo"] == "moved"
        return
    assert heard["moved"] == [], heard
    assert heard["sysinfo"] == "EPERM"
    # The frozen copies still parse: Shmem and the fork count were read, one value each.
    assert heard["ranges"]["shmem_kb"][0] == heard["ranges"]["shmem_kb"][1]
    assert heard["ranges"]["processes"][0] == heard["ranges"]["processes"][1]
    assert heard["samples"] >= 20
