"""bwrap's `--dev` binds six of the host's own nodes (/dev/null, zero, full, random, urandom,
tty) into the box. As root, the box's uid maps onto the host's root, which owns them: a
start could chmod or touch /dev/null itself, leaving the next start bits in its mode and
times (about 76 a node), or break the host's /dev/null. Each start gets copies of its own.

No test here marks the host's own nodes: an earlier control did (restoring only /dev/full),
and two runs of the suite on one machine (CI beside a newcomer's `make test-fast`) then
saw each other's marks, failing with nothing wrong in the sandbox. The control binds
nodes the test made itself, the same inodes to every start, as bwrap binds the host's."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes import gpu
from apmbench.harness.runtimes.process import sandboxed_process
from apmbench.harness.runtimes.sandbox import STANDARD_NODES, Sandbox, SandboxPolicy

pytestmark = [pytest.mark.integration]

WRITE = r"""
import json, os, stat
out = {}
for name in ("null", "zero", "full", "random", "urandom", "tty"):
    path = "/dev/" + name
    seen = os.stat(path)
    out[name] = {"mode": oct(stat.S_IMODE(seen.st_mode)), "mtime": seen.st_mtime_ns}
    try:
        os.utime(path, ns=(123456789 * 10**9, 123456789 * 10**9))
        out[name]["touched"] = True
    except OSError as e:
        out[name]["touched"] = e.strerror
print(json.dumps(out))
"""
CHMOD = "import os; os.chmod('/dev/zero', 0o600); print(oct(os.stat('/dev/zero').st_mode))"


def _run(box: Sandbox, code: str) -> str:
    done = box.run(["/usr/bin/python3", "-c", code], timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="as non-root the box's uid owns no host node")
def test_a_start_cannot_mark_the_standard_nodes_for_the_next() -> None:
    before = {n: os.stat(n) for n in STANDARD_NODES}
    # A copy takes its node's owner: a host node that is not root's was chowned by something
    # (runsc, as root, chowns the stdio it is handed: given /dev/null, it made it 65534's).
    strays = {str(n): s.st_uid for n, s in before.items() if s.st_uid != 0}
    assert not strays, f"host device nodes not owned by root: {strays}"
    box = Sandbox(SandboxPolicy(read_only=()))
    assert box.device_copies is not None
    first = json.loads(_run(box, WRITE))
    assert all(v["touched"] is True for v in first.values()), first  # its own copies
    assert _run(box, CHMOD).strip().endswith("600")
    second = json.loads(_run(box, WRITE))
    for name, seen in second.items():
        assert seen["mtime"] != 123456789 * 10**9, f"/dev/{name}: the earlier start's mark"
    assert second["zero"]["mode"] == oct(os.stat("/dev/zero").st_mode & 0o7777)
    for node in STANDARD_NODES:
        after = os.stat(node)
        assert (after.st_mode, after.st_mtime_ns) == (
            before[node].st_mode,
            before[node].st_mtime_ns,
        ), f"{node} changed on the host"


@pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes (mknod) needs root")
def test_the_check_sees_a_mark_on_nodes_every_start_shares(tmp_path: Path) -> None:
    """The positive control: the same nodes bound into every start (as bwrap binds the
    host's when no copies are made), here nodes this test made, never the host's. The
    first start's mark and mode reach the second, so the test above could see them."""
    before = {n: os.stat(n) for n in STANDARD_NODES}
    box = Sandbox(SandboxPolicy(read_only=()))
    assert box.device_copies is not None
    box.device_copies = SharedNodes(tmp_path)
    first = json.loads(_run(box, WRITE))
    assert all(v["touched"] is True for v in first.values()), first
    assert _run(box, CHMOD).strip().endswith("600")
    second = json.loads(_run(box, WRITE))
    assert {name: seen["mtime"] for name, seen in second.items()} == {
        name: 123456789 * 10**9 for name in second
    }
    assert second["zero"]["mode"] == "0o600"
    for node in STANDARD_NODES:  # the host's own nodes were never bound
        after = os.stat(node)
        assert (after.st_mode, after.st_mtime_ns) == (
            before[node].st_mode,
            before[node].st_mtime_ns,
        )


class SharedNodes(gpu.DeviceCopies):
    """Copies made once and handed to every start: one set of inodes shared by all."""

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self._made_once: list[Path] | None = None

    def fresh(self, nodes: Sequence[Path]) -> list[Path]:
        if self._made_once is None:
            self._made_once = super().fresh(nodes)
        assert [c.name for c in self._made_once] == [n.name for n in nodes]
        return self._made_once


@pytest.mark.usefixtures("helper_env")
@pytest.mark.parametrize("start", ["fresh", "template"])
def test_a_served_start_leaves_no_mark_for_its_spare_or_the_next(
    tmp_path: Path, start: str
) -> None:
    """The same through the runtime a `--system` run uses: a serving start, its spare, and a
    restart, each reading whether one before it marked /dev/full, then marking it."""
    host = Path("/dev/full")
    kept = os.stat(host)
    rt = sandboxed_process(
        "helpers.template_probes:DevNodeMarker",
        tmp_path / "system.log",
        Deadlines(),
        120.0,
        sandbox=True,
        spare=True,
        start=start,
    )
    try:
        rt.start().describe()
        rt.expect_restarts()
        rt.restart().describe()
        rt.restart().describe()
    finally:
        rt.stop()
        now = os.stat(host)
        os.utime(host, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    text = (tmp_path / "system.log").read_text()
    found = [json.loads(m) for m in re.findall(r"^probe: (.*)$", text, re.MULTILINE)]
    assert len(found) >= 3, text
    assert not any(f["marked"] for f in found), found
    assert now.st_mtime_ns == kept.st_mtime_ns, "a start's mark reached the host's /dev/full"
