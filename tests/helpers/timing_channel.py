"""The CPU-contention channel between two concurrently live sandboxes, measured.

The seccomp filter closes the lock, residency and file-event relays between a live
system and its spare; what stays is timing. Here a sender in one hardened sandbox
spins for a slot to send a 1 and sleeps to send a 0; a receiver in another counts how
many iterations of a loop it completes in each slot, and reads a slot as a 1 when its
count falls below the median (the message has as many ones as zeros). Both align their
slots on CLOCK_MONOTONIC, which no namespace separates, from a start time the driver
passes to both (a real pair would agree on one in advance, e.g. the next whole second).

`--same-cpu` pins both to one CPU: the worst case, a spare scheduled beside the live
process on a busy host. Unpinned is what the harness does. The figure printed is the
raw rate (1 / slot), the bit error rate, and the capacity of the binary symmetric
channel with that error rate, R * (1 - H(p)): what a coder could carry error-free.

    PYTHONPATH=tests .venv/bin/python -m helpers.timing_channel --bits 256 --slot-ms 20
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from typing import Any

from apmbench.harness.runtimes.sandbox import Sandbox, python_policy

SENDER = r"""
import os, sys, time
start, slot, bits, cpu = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if cpu >= 0:
    os.sched_setaffinity(0, {cpu})
for i, b in enumerate(bits):
    end = start + (i + 1) * slot
    now = time.monotonic()
    if now >= end:
        continue
    if b == "1":
        while time.monotonic() < end:
            pass
    else:
        time.sleep(end - now)
"""

RECEIVER = r"""
import json, os, sys, time
start, slot, n, cpu = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if cpu >= 0:
    os.sched_setaffinity(0, {cpu})
counts = []
while time.monotonic() < start:
    pass
for i in range(n):
    end = start + (i + 1) * slot
    c = 0
    while time.monotonic() < end:
        c += 1
    counts.append(c)
print(json.dumps(counts))
"""


def binary_entropy(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -p * math.log2(p) - (1 - p) * math.log2(1 - p)


def decode(counts: list[int]) -> str:
    """A slot whose loop count falls below the median was shared with a spinning sender."""
    median = sorted(counts)[len(counts) // 2]
    return "".join("1" if c < median else "0" for c in counts)


def measure(
    bits: int = 128, slot_ms: float = 20.0, same_cpu: bool = False, seed: int = 0
) -> dict[str, Any]:
    """Send `bits` random bits (half of them ones) from one hardened sandbox to another."""
    rng = random.Random(seed)
    message = ["1"] * (bits // 2) + ["0"] * (bits - bits // 2)
    rng.shuffle(message)
    sent = "".join(message)
    cpu = min(os.sched_getaffinity(0)) if same_cpu else -1
    sandbox = Sandbox(python_policy("null", [], {}))
    slot = slot_ms / 1000
    # Far enough ahead that both sandboxes are up before the first slot, on a loaded host.
    start = time.monotonic() + 3.0
    stdin = sandbox.stdin()
    sender = subprocess.Popen(
        sandbox.wrap([sys.executable, "-c", SENDER, repr(start), repr(slot), sent, str(cpu)]),
        stdin=stdin,
    )
    os.close(stdin)
    try:
        done = sandbox.run(
            [sys.executable, "-c", RECEIVER, repr(start), repr(slot), str(bits), str(cpu)],
            timeout=60 + bits * slot * 4,
        )
    finally:
        sender.wait(60 + bits * slot * 4)
    if done.returncode != 0:
        raise RuntimeError(f"the receiver failed: {done.stderr}")
    counts: list[int] = json.loads(done.stdout)
    got = decode(counts)
    errors = sum(a != b for a, b in zip(sent, got, strict=True))
    p = errors / bits
    rate = 1 / slot
    return {
        "bits": bits,
        "slot_ms": slot_ms,
        "same_cpu": same_cpu,
        "errors": errors,
        "bit_error_rate": round(p, 4),
        "raw_bits_per_s": round(rate, 2),
        "capacity_bits_per_s": round(rate * (1 - binary_entropy(min(p, 1 - p))), 2),
        "sender_exit": sender.returncode,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bits", type=int, default=128)
    parser.add_argument("--slot-ms", type=float, default=20.0)
    parser.add_argument("--same-cpu", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.bits, args.slot_ms, args.same_cpu, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
