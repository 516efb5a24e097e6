"""The measurement behind docs/guarantees.md's host-wide counter figures keeps working, and
Shmem carries nothing between two sandboxes.

Not timed: what the open channels carry depends on the host and its load, and the docs say
which host measured what. What is checked: the pair runs in two hardened sandboxes and
reports the figures; through the live /proc/meminfo (as every box read it before) the
receiver sees the sender's 16 MiB come and go, through the box's frozen copy it reads one
value throughout."""

from __future__ import annotations

import pytest
from helpers.counter_channel import decode, measure

from apmbench.harness.runtimes.sandbox import find_bwrap

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)


def test_the_decoder_reads_high_levels_and_large_changes_as_ones() -> None:
    assert decode([0, 9, 1, 9, 1], level=True) == "1010"
    assert decode([0, 10, 10, 25, 25], level=False) == "1010"
    assert decode([5, 5, 5, 5, 5], level=True) == "0000"  # a frozen counter says nothing


def test_shmem_carries_the_message_live_and_nothing_frozen() -> None:
    live = measure("shmem", bits=32, slot_ms=20, view=False)
    assert live["sender_exit"] == 0
    assert live["spread"] >= 12 << 10  # kB: the sender's 16 MiB, held and dropped
    frozen = measure("shmem", bits=32, slot_ms=20, view=True)
    assert frozen["spread"] == 0
    assert frozen["errors"] == 16 and frozen["capacity_bits_per_s"] == 0.0
