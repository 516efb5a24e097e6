"""Red team 10's store in the kernel's inode-number counters (tests/helpers/inode_register.py):
a start leaves a 10-bit checksum of its export in its CPU's place in the memfd inode batch,
and the next start reads it. Before the harness scrambled the counters between starts
(harness/runtimes/inode_counters.py) every import straight after an export read its
checksum back (6 of 6, and 20 bits a restart on the 2-CPU host: APM-Bench Overall 45.33 ->
67.56 at 200 B/hr); now a match is a 1-in-1024 accident, in fresh and template starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import inode_register

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import RuntimeSpec
from apmbench.harness.runtimes import process as process_runtime
from apmbench.harness.runtimes.inode_counters import scramble
from apmbench.harness.runtimes.sandbox import find_bwrap

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
        held.append(inode_register.read())
    assert held == list(values)  # read back at once: the store works
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
            runtime=RuntimeSpec(
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


@pytest.mark.slow
def test_without_the_scramble_the_next_start_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The positive control: the same run with the scramble turned off."""
    monkeypatch.setattr(process_runtime, "scramble_inode_counters", lambda: {})
    seen = _matches(tmp_path, "fresh")
    assert seen.count("MATCH") >= 1, seen
