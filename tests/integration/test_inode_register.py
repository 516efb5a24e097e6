"""Red team 10's store in the kernel's inode-number counters (tests/helpers/inode_register.py):
a start leaves a 10-bit checksum of its export in its CPU's place in the memfd inode batch,
and the next start reads it. Before the harness scrambled the counters between starts
(harness/runtimes/inode_counters.py) every import straight after an export read its
checksum back (6 of 6, and 20 bits a restart on the 2-CPU host: APM-Bench Overall 45.33 ->
67.56 at 200 B/hr); now a match is a 1-in-1024 accident, in fresh and template starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import inode_register

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.inode_counters import scramble
from apmbench.harness.runtimes.sandbox import Sandbox, find_bwrap, python_policy

TESTS = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not installed"),
    pytest.mark.usefixtures("helper_env"),
]


def test_the_register_holds_a_value_and_the_scramble_erases_it() -> None:
    values = (5, 300, 777, 1000, 42)
    held = []
    for v in values:
        inode_register.write(v)
        held.append(inode_register.read() == v)
    # Read back at once: the store works. The counter is host-wide, so another process
    # making a memfd between the two moves it (CI beside another run: 664 for 777).
    assert sum(held) >= 3, held
    after = []
    for v in values:
        inode_register.write(v)
        scramble()
        after.append(inode_register.read() == v)
    assert sum(after) <= 1, after  # 1 in 1024 by accident


def _matches(tmp_path: Path, start: str) -> list[str]:
    out = tmp_path / f"run-{start}"
    evaluate(
        EvaluateOptions(
            dataset=TESTS / "fixtures" / "mini",
            out=out,
            runtime=runtime_spec(
                system="helpers.inode_register:InodeRegister", start=start, spare=False
            ),
            persistence=Persistence.RESTART,
        )
    )
    text = "\n".join(p.read_text() for p in sorted((out / "logs").glob("system*.log")))
    return [line.split("register: ")[1] for line in text.splitlines() if "register: " in line]


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fresh", "template"])
def test_no_start_reads_what_the_one_before_left(tmp_path: Path, start: str) -> None:
    seen = _matches(tmp_path, start)
    assert len(seen) >= 3, seen
    assert seen.count("MATCH") <= 1, seen


REGISTER = r"""
import os, sys
def place():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    fd = os.memfd_create("register")
    try:
        return os.fstat(fd).st_ino % 1024
    finally:
        os.close(fd)
if sys.argv[1] == "write":
    for _ in range(2048):
        if place() == int(sys.argv[2]):
            break
else:
    print((place() - 1) % 1024)
"""


def test_without_the_scramble_the_next_box_reads_it() -> None:
    """The positive control: one hardened box writes, the next reads, with nothing run
    between them but bwrap. Other work on the host (another test's starts scramble, and
    anything may make memfds) can move the place between the two, so of several tries one
    must read its value back; with the scramble between them, chance alone would."""
    sandbox = Sandbox(python_policy("null", [], {}))
    read_back = []
    for value in (101, 333, 555, 777, 999, 222, 444, 888):
        wrote = sandbox.run([sys.executable, "-c", REGISTER, "write", str(value)])
        assert wrote.returncode == 0, wrote.stderr
        got = sandbox.run([sys.executable, "-c", REGISTER, "read"])
        assert got.returncode == 0, got.stderr
        read_back.append(int(got.stdout) == value)
    assert any(read_back), read_back
