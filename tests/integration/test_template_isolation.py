"""A start forked from the template (`--start template`) reaches neither a sibling (the
serving system's spare) nor the template, and ends with no more than a fresh start.

SiblingProbe (tests/helpers/template_probes.py) looks for what the process before it
left in /tmp, /dev/shm, SysV IPC and an abstract Unix socket, lists the pids it can see,
signals every process it may, tries ptrace, new user namespaces, a write to /dev and to
its weights directory (bound read-only, under /tmp, so a template start binds it again
into its fresh /tmp), and reports its capabilities, seccomp mode and descriptors.
Unconfined, the second process finds everything the first left (so the probe works)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from helpers.template_probes import sysv_key

from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import sandboxed_process
from apmbench.harness.runtimes.sandbox import find_bwrap

pytestmark = [
    pytest.mark.skipif(
        find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
    ),
    pytest.mark.usefixtures("helper_env"),
]
ZERO = "0000000000000000"


@pytest.fixture
def tag() -> Iterator[str]:
    name = uuid.uuid4().hex[:12]
    yield name
    for place in ("/tmp", "/dev/shm"):
        Path(place, f"apm-probe-{name}").unlink(missing_ok=True)
    key = hex(sysv_key(name))
    subprocess.run(["ipcrm", "-M", key, "-Q", key], capture_output=True, check=False)


def _wait_serving(pid: int, directory: Path, timeout: float = 180.0) -> None:
    """Until a process of the tree at `pid` has a socket at `directory`/sock in its root.
    A wait, not a measurement: 60 s ran out on a 2-core CI machine at load 10 (a CPU
    hog beside four workers)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(psutil.Error):
            tree = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
            if any(os.path.lexists(f"/proc/{p}/root{directory}/sock") for p in tree):
                return
        time.sleep(0.01)
    raise AssertionError(f"no socket in {directory} after {timeout} s")


def probes(tmp_path: Path, tag: str, mode: str) -> list[dict[str, Any]]:
    """The probe lines of a serving start and of the spare started beside it."""
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "weights.bin").write_bytes(b"\0" * 64)
    rt = sandboxed_process(
        "helpers.template_probes:SiblingProbe",
        tmp_path / "system.log",
        Deadlines(),
        120.0,
        sandbox=mode != "unconfined",
        env=(f"APMBENCH_CHEAT_TAG={tag}", f"APMBENCH_VLM_MODEL={weights}"),
        spare=True,
        start="template" if mode == "template" else "fresh",
    )
    try:
        rt.start().describe()
        rt.expect_restarts()  # the spares start now, while the first one serves
        for spare in rt._spares:  # each has probed (and serves) while the first one lives
            _wait_serving(spare.proc.pid, spare.dir)
        rt.restart().describe()  # the first spare's output reaches the log
    finally:
        rt.stop()
    text = (tmp_path / "system.log").read_text()
    found = [json.loads(m) for m in re.findall(r"^probe: (.*)$", text, re.MULTILINE)]
    assert len(found) == 2, text
    assert (weights / "weights.bin").read_bytes() == b"\0" * 64 or mode == "unconfined"
    return found


@pytest.mark.parametrize("mode", ["template", "fresh"])
def test_a_start_reaches_no_sibling_and_holds_nothing_more(
    tmp_path: Path, tag: str, mode: str
) -> None:
    first, second = probes(tmp_path, tag, mode)
    assert not any(first["found"].values())
    assert not any(second["found"].values()), second["found"]  # the spare heard nothing
    for seen in (first, second):
        assert seen["pids"] == [1, 2] and seen["pid"] == 2  # no sibling, no template
        assert seen["kill_all"] == "ESRCH" and seen["ptrace"] == "EPERM"
        assert seen["uid"] == 65534 and seen["unshare_user"] == "EPERM"
        # Its own network namespace, and no IP socket on it: loopback packets move host-wide
        # counters that outlive a start (seccomp.NETWORK).
        assert seen["interfaces"] == ["lo"] and seen["loopback"] == "EAFNOSUPPORT"
        status = seen["status"]
        assert all(status[k] == ZERO for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"))
        assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"
        assert seen["weights_write"] == "EROFS" and seen["weights_new"] == "EROFS"
        assert seen["weights_remount"] == "EPERM"
        assert seen["cmdline"][1:3] == ["-m", "apmbench.adapters"]
        assert seen["cmdline"][3] == "helpers.template_probes:SiblingProbe"
        assert seen["cmdline"][4] == "--address" and seen["cmdline"][5].startswith("unix:/tmp/")
        # stdout and stderr (the log pipe), the listener it bound and the directory it
        # listed: no stdin (a fresh start's bwrap closes it), nothing of the template.
        assert sorted(seen["fd_targets"]) == ["0", "1", "2"], seen["fd_targets"]
    if mode == "template":
        # The box's /dev is the template's: read-only in every start (a fresh box's own
        # /dev is its private tmpfs).
        assert first["dev_write"] == second["dev_write"] == "EROFS"


def test_the_same_start_as_fresh(tmp_path: Path, tag: str) -> None:
    """A template start holds no descriptor, capability or filter a fresh one lacks."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    template = probes(tmp_path / "a", tag, "template")[1]
    fresh = probes(tmp_path / "b", tag + "f", "fresh")[1]
    keys = ("status", "uid", "pids", "pid", "kill_all", "ptrace", "unshare_user", "loopback")
    for key in (*keys, "interfaces"):
        assert template[key] == fresh[key], key
    assert sorted(template["fd_targets"]) == sorted(fresh["fd_targets"])
    assert template["cmdline"][:5] == fresh["cmdline"][:5]


def test_unconfined_the_probe_finds_what_the_first_left(tmp_path: Path, tag: str) -> None:
    first, second = probes(tmp_path, tag, "unconfined")
    assert not any(first["found"].values())
    assert all(second["found"].values()), second["found"]
    assert second["weights_write"] == "written"


def test_the_template_imports_no_system_and_runs_one_thread() -> None:
    code = (
        "import sys, threading, apmbench.adapters.template as t; "
        "print(sorted(sys.modules)); print(threading.active_count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    modules, threads = done.stdout.splitlines()
    loaded = json.loads(modules.replace("'", '"'))
    assert threads == "1"
    ours = [m for m in loaded if m.startswith(("apmbench", "helpers", "tests"))]
    assert not [m for m in ours if m.startswith("apmbench.adapters.systems.")], ours
    assert not [m for m in ours if m.startswith(("apmbench.harness", "helpers", "tests"))]
