"""The measurement behind docs/guarantees.md's timing-channel figures keeps working.

Not timed: the bandwidth depends on the host and its load, and the docs say which host
measured what. This test runs the same sender/receiver pair, in two hardened sandboxes,
and checks that the script still sends, receives and reports what the docs quote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.timing_channel import binary_entropy, decode, measure

from apmbench.harness.runtimes.sandbox import find_bwrap

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)

TESTS = Path(__file__).resolve().parents[1]


def test_the_decoder_reads_slower_slots_as_ones() -> None:
    assert decode([100, 40, 90, 35, 110, 50]) == "010101"
    assert binary_entropy(0.5) == 1.0
    assert binary_entropy(0.0) == 0.0


@pytest.mark.slow
def test_the_pair_runs_in_two_sandboxes_and_reports_the_figures() -> None:
    got = measure(bits=16, slot_ms=20, same_cpu=True)
    assert got["bits"] == 16 and got["sender_exit"] == 0
    assert 0 <= got["errors"] <= 16
    assert got["bit_error_rate"] == round(got["errors"] / 16, 4)
    assert 0 <= got["capacity_bits_per_s"] <= got["raw_bits_per_s"] == 50.0


@pytest.mark.slow
def test_the_documented_command_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "helpers.timing_channel", "--bits", "8", "--slot-ms", "10"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS,
        env={"PYTHONPATH": str(TESTS), "PATH": "/usr/local/bin:/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["bits"] == 8 and row["same_cpu"] is False and row["raw_bits_per_s"] == 100.0
