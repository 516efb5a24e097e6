"""Two systems alive at once (a live one and its spare) read the same files, and the
kernel's lock tables belong to files, not namespaces. A sender holding byte-range read
locks on a shared read-only file, or a BSD lock on it, spells out bits a receiver in
another sandbox reads with F_OFD_GETLK or a non-blocking flock: memory relayed past the
export, with no privilege at all. The seccomp filter refuses the lock inspection and
makes flock a no-op; page-cache residency (mincore) is refused too.

Both halves run: without the filter the relay carries the message (so the test can see
the channel), with it the receiver learns nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.template_runs import Started, template

from apmbench.harness.runtimes.sandbox import Sandbox, SandboxPolicy, find_bwrap, python_policy

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)

MESSAGE = 0b1011_0010_1110_0101
BITS = 16

SENDER = r"""
import fcntl, os, struct, sys, time
path, message, bits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
f = open(path, "rb")
for i in range(bits):
    if message >> i & 1:
        fcntl.fcntl(f.fileno(), fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, i, 1, 0))
g = open(path, "rb")
fcntl.flock(g.fileno(), fcntl.LOCK_EX)
print("ready", flush=True)
time.sleep(300)  # the test kills it
"""

RECEIVER = r"""
import ctypes, errno, fcntl, json, mmap, os, struct, sys
path, bits = sys.argv[1], int(sys.argv[2])
f = open(path, "rb")
out = {}
try:
    value = 0
    for i in range(bits):
        got = fcntl.fcntl(f.fileno(), fcntl.F_OFD_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, i, 1, 0))
        if struct.unpack("hhqqi", got)[0] != fcntl.F_UNLCK:
            value |= 1 << i
    out["getlk"] = value
except OSError as e:
    out["getlk"] = errno.errorcode[e.errno]
try:
    fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    out["flock"] = "free"
except OSError as e:
    out["flock"] = errno.errorcode[e.errno]
libc = ctypes.CDLL(None, use_errno=True)
page = ctypes.create_string_buffer(8192)  # a mapped page inside it: mincore's argument
vec = ctypes.create_string_buffer(1)
ret = libc.mincore(ctypes.c_void_p((ctypes.addressof(page) + 4095) & ~4095), ctypes.c_size_t(4096), vec)
out["mincore"] = "ok" if ret == 0 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(out))
"""


def _policy(shared: Path) -> SandboxPolicy:
    base = python_policy("null", [], {})
    return SandboxPolicy(read_only=(*base.read_only, shared), hidden=base.hidden, env=base.env)


def _relay(tmp_path: Path, harden: bool) -> dict[str, Any]:
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "weights.bin"
    target.write_bytes(bytes(8192))
    sandbox = Sandbox(_policy(shared), harden=harden)
    stdin = sandbox.stdin()
    sender = subprocess.Popen(
        sandbox.wrap([sys.executable, "-c", SENDER, str(target), str(MESSAGE), str(BITS)]),
        stdin=stdin,
        stdout=subprocess.PIPE,
        text=True,
    )
    os.close(stdin)
    try:
        assert sender.stdout is not None
        assert sender.stdout.readline().strip() == "ready"  # its locks are held from now on
        done = sandbox.run([sys.executable, "-c", RECEIVER, str(target), str(BITS)])
        assert done.returncode == 0, done.stderr
        seen: dict[str, Any] = json.loads(done.stdout)
        return seen
    finally:
        sender.kill()
        sender.wait()


def test_without_the_filter_locks_relay_a_message_between_sandboxes(tmp_path: Path) -> None:
    seen = _relay(tmp_path, harden=False)
    assert seen["getlk"] == MESSAGE  # 16 bits across, no privilege needed
    assert seen["flock"] == "EWOULDBLOCK" or seen["flock"] == "EAGAIN"


def test_the_filter_closes_the_lock_and_residency_channels(tmp_path: Path) -> None:
    seen = _relay(tmp_path, harden=True)
    assert seen == {"getlk": "EPERM", "flock": "free", "mincore": "EPERM"}


@pytest.mark.usefixtures("helper_env")
def test_template_siblings_relay_nothing(tmp_path: Path) -> None:
    """Sender and receiver as two starts forked from one template (a serving start and
    its spare under `--start template`): each installed the full filter itself."""
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "weights.bin"
    target.write_bytes(bytes(8192))
    env = {
        "APMBENCH_PROBE_SENDER": SENDER,
        "APMBENCH_PROBE_SENDER_ARGS": json.dumps([str(target), str(MESSAGE), str(BITS)]),
        "APMBENCH_PROBE_RECEIVER": RECEIVER,
        "APMBENCH_PROBE_RECEIVER_ARGS": json.dumps([str(target), str(BITS)]),
    }
    base = python_policy("helpers.template_probes:RunSender", [], env)
    policy = SandboxPolicy(
        read_only=(*base.read_only, shared), hidden=base.hidden, env=base.env, path=base.path,
        cwd=base.cwd,
    )  # fmt: skip
    with template(Sandbox(policy), tmp_path / "template.log") as tpl:
        sender = Started(tpl, "helpers.template_probes:RunSender")
        try:
            sender.line("ready")  # its locks are held from now on
            receiver = Started(tpl, "helpers.template_probes:RunReceiver")
            try:
                seen = json.loads(receiver.line("{"))
            finally:
                receiver.stop()
        finally:
            sender.stop()
    assert seen == {"getlk": "EPERM", "flock": "free", "mincore": "EPERM"}
